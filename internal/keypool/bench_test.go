package keypool

import "testing"

// BenchmarkPickDone is one request's key selection and the record of its
// answer: what a pool adds to a request on the hot path.
func BenchmarkPickDone(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(map[int]string{1: "keys=1", 4: "keys=4"}[n], func(b *testing.B) {
			ps, err := New(Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer ps.Close()
			ids := []string{"a", "b", "c", "d"}[:n]
			p := ps.Provider("openai", keys(ids...), "g")
			b.ReportAllocs()
			for b.Loop() {
				pk := p.Pick(0)
				p.Done(pk, OK, 0, false)
			}
		})
	}
}
