package toolname

import (
	"regexp"
	"strings"
	"testing"
)

func TestAliases(t *testing.T) {
	long := "svc.a_very_long_tool_name_that_goes_on_and_on_past_what_providers_accept_as_a_name"
	got, err := Aliases([]string{"inventory.get_stock", "a.b-c", "x.y.z", "x_.y", "x._y", long})
	if err != nil {
		t.Fatal(err)
	}
	if got["inventory.get_stock"] != "inventory__get_stock" || got["a.b-c"] != "a__b-c" || got["x.y.z"] != "x__y_z" {
		t.Fatalf("readable aliases: %v", got)
	}
	// x_.y and x._y both read x___y: both hashed, still distinct.
	if got["x_.y"] == got["x._y"] || got["x_.y"] == "x___y" {
		t.Fatalf("colliding names: %q %q", got["x_.y"], got["x._y"])
	}
	for n, a := range got {
		if !Safe(a) {
			t.Errorf("%s: alias %q is not provider-safe", n, a)
		}
	}
}

func TestReadableAndHashed(t *testing.T) {
	for in, want := range map[string]string{
		"trading-api.get_market_context": "trading-api__get_market_context",
		"svc.a.b":                        "svc__a_b",
	} {
		if got := Readable(in); got != want {
			t.Errorf("%s -> %s, want %s", in, got, want)
		}
	}
	long := "service-with-a-very-long-name-indeed.and-a-tool-name-that-is-also-quite-long"
	if a := Hashed(long); len(a) > 64 || !Safe(a) || a != Hashed(long) {
		t.Errorf("hashed alias %q", a)
	}
}

func FuzzAliasesSafe(f *testing.F) {
	f.Add("svc.tool", "svc_.tool")
	f.Add("é.ü", "\x00.\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		names := []string{a}
		if b != a {
			names = append(names, b)
		}
		got, err := Aliases(names)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == 2 && got[a] == got[b] {
			t.Fatalf("%q and %q share alias %q", a, b, got[a])
		}
		for _, al := range got {
			if !Safe(al) {
				t.Fatalf("alias %q not safe", al)
			}
		}
	})
}

// FuzzSafe holds Safe to the pattern it stands for.
func FuzzSafe(f *testing.F) {
	pattern := regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	for _, s := range []string{"", "a", "desk__ping", "a-b_C9", "a.b", "a b", "a\n", "é", strings.Repeat("a", 64), strings.Repeat("a", 65)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Safe(s), pattern.MatchString(s); got != want {
			t.Fatalf("Safe(%q) = %v, the pattern says %v", s, got, want)
		}
	})
}
