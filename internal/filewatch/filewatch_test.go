package filewatch

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestValueReloadsOnlyWhenDueAndChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var v Value[string]
	first := "a"
	v.Set(&first, Stamp(path), now)
	reloads := 0
	get := func(at time.Time, val *string) *string {
		return v.Get(at, time.Second,
			func() (string, error) { return Stamp(path), nil },
			func() (*string, string) { reloads++; return val, Stamp(path) })
	}
	second, kept := "b", (*string)(nil)
	if got := get(now.Add(2*time.Second), &second); *got != "a" || reloads != 0 {
		t.Fatalf("unchanged file: %q after %d reloads", *got, reloads)
	}
	if err := os.WriteFile(path, []byte("bb"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := get(now.Add(2500*time.Millisecond), &second); *got != "a" || reloads != 0 {
		t.Fatalf("checked before the interval: %q after %d reloads", *got, reloads)
	}
	if got := get(now.Add(4*time.Second), &second); *got != "b" || reloads != 1 {
		t.Fatalf("changed file: %q after %d reloads", *got, reloads)
	}
	if err := os.WriteFile(path, []byte("ccc"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := get(now.Add(6*time.Second), kept); *got != "b" || reloads != 2 {
		t.Fatalf("a nil reload must keep the value: %q after %d reloads", *got, reloads)
	}
	if got := get(now.Add(8*time.Second), kept); reloads != 2 || *got != "b" {
		t.Fatalf("the failed reload's stamp was not kept: %d reloads", reloads)
	}
}

func TestStampSeesAbsentFiles(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	before := Stamp(a, b)
	if err := os.WriteFile(b, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if Stamp(a, b) == before {
		t.Fatal("creating a file did not change the stamp")
	}
}
