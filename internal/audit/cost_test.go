package audit

import (
	"encoding/json"
	"testing"
)

func TestCostJSON(t *testing.T) {
	for _, c := range []struct {
		micro int64
		want  string
	}{{0, "0.00"}, {1, "0.000001"}, {1_500_000, "1.50"}, {12_345_678, "12.345678"}, {-250_000, "-0.25"}} {
		b, _ := json.Marshal(KnownCost(c.micro))
		if string(b) != c.want {
			t.Errorf("%d → %s, want %s", c.micro, b, c.want)
		}
		var back Cost
		if err := json.Unmarshal(b, &back); err != nil || back != KnownCost(c.micro) {
			t.Errorf("%s read back as %+v, %v", b, back, err)
		}
	}
	e := Event{Type: TypeResponse, CostUSD: UnknownCost(), CostUnknown: true}
	got, _ := appendEvent(nil, &e)
	want, _ := json.Marshal(e)
	if string(got) != string(want) || !json.Valid(got) {
		t.Fatalf("appendEvent = %s, json.Marshal = %s", got, want)
	}
	if b, _ := json.Marshal(Event{}); string(b) != `{"ts":"0001-01-01T00:00:00Z","type":""}` {
		t.Fatalf("an event without cost writes none: %s", b)
	}
	for _, bad := range []string{"", "1e3", "1.", ".5", "1.1234567", "abc", "99999999999"} {
		if _, err := ParseUSD(bad); err == nil {
			t.Errorf("ParseUSD(%q) accepted", bad)
		}
	}
	if a := KnownCost(5).Add(UnknownCost()); !a.Unknown() || a.MicroUSD != 5 {
		t.Fatalf("known + unknown = %+v", a)
	}
}

// FuzzParseUSD: whatever the text, an amount read back is written the
// same way it reads (no rounding, no overflow).
func FuzzParseUSD(f *testing.F) {
	for _, s := range []string{"3", "0.30", "-1.5", "1000000000", "0.000001", "1.", "", "1e3", "00.10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseUSD(s)
		if err != nil {
			return
		}
		back, err := ParseUSD(FormatUSD(v))
		if err != nil || back != v {
			t.Fatalf("%q → %d → %q → %d, %v", s, v, FormatUSD(v), back, err)
		}
	})
}
