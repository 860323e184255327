package feeds

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/manifest"
)

// FuzzRenderCaps renders feeds of arbitrary sizes under arbitrary caps and
// checks the cap rules: each feed keeps its frame, in manifest order; a
// feed's content never exceeds FeedCap; whatever is shown of it is a prefix
// of it, annotated when cut; and the whole text stays within TotalCap
// whenever the frames alone fit.
func FuzzRenderCaps(f *testing.F) {
	f.Add(uint16(100), uint16(5000), uint16(300), uint16(0), true, 16384, 65536)
	f.Add(uint16(3000), uint16(3000), uint16(3000), uint16(3000), false, 1000, 2500)
	f.Add(uint16(0), uint16(1), uint16(40000), uint16(7), true, 10, 600)
	f.Fuzz(func(t *testing.T, s1, s2, s3, s4 uint16, jsonFirst bool, feedCap, totalCap int) {
		feedCap = min(max(feedCap, 1), 1<<20)
		totalCap = min(max(totalCap, 1), 1<<20)
		now := time.Date(2026, 3, 19, 14, 0, 0, 0, time.UTC)
		d := New(Options{FeedCap: feedCap, TotalCap: totalCap, Now: func() time.Time { return now }})
		var feeds []manifest.Feed
		var outs []outcome
		var bodies []string
		for i, n := range []uint16{s1, s2, s3, s4} {
			name := fmt.Sprintf("feed-%d", i)
			feeds = append(feeds, manifest.Feed{Name: name, Source: "svc"})
			if n == 7 { // an unavailable feed
				outs = append(outs, outcome{reason: "down"})
				bodies = append(bodies, "")
				continue
			}
			body := strings.Repeat("aé\n", int(n)/4)
			s := &snapshot{content: body, json: i == 0 && jsonFirst, refreshed: now, fetchedAt: now}
			outs = append(outs, outcome{snap: s, stale: i == 3, reason: "HTTP 500"})
			bodies = append(bodies, body)
		}
		text := d.render(feeds, outs)

		frames := len(Preface)
		prev := -1
		for i := range feeds {
			b := block(t, text, feeds[i].Name)
			at := strings.Index(text, b)
			if at <= prev {
				t.Fatalf("block %d out of order", i)
			}
			prev = at
			fr := newFrame(&feeds[i], outs[i], now)
			frames += len(blockSep) + len(fr.head) + len(fr.foot)
			if outs[i].snap != nil {
				frames += len(fmt.Sprintf("[content omitted: total feed cap of %d bytes per request reached]\n", totalCap))
			}
			if !strings.HasPrefix(b, fr.head) || !strings.HasSuffix(b, fr.foot) {
				t.Fatalf("block %d frame broken:\n%s", i, b)
			}
			if outs[i].snap == nil {
				continue
			}
			sec := b[len(fr.head) : len(b)-len(fr.foot)]
			if len(sec) > feedCap && !strings.HasPrefix(sec, "[content omitted") && !strings.HasPrefix(sec, "[the feed returned no content]") {
				t.Fatalf("block %d: section of %d bytes over feed cap %d", i, len(sec), feedCap)
			}
			shown, note, cut := strings.Cut(sec, "[truncated: ")
			switch {
			case strings.HasPrefix(sec, "[content omitted") || strings.HasPrefix(sec, "[the feed returned no content]"):
			case outs[i].snap.json:
				fence := fenceFor(bodies[i])
				inner := strings.TrimSuffix(strings.TrimPrefix(shown, fence+"json\n"), "\n"+fence+"\n")
				if !strings.HasPrefix(bodies[i], inner) || (!cut && inner != bodies[i]) {
					t.Fatalf("block %d: json content not a prefix or cut silently:\n%s", i, sec)
				}
			default:
				inner := strings.TrimSuffix(shown, "\n")
				if !strings.HasPrefix(bodies[i], inner) || (!cut && inner != bodies[i]) {
					t.Fatalf("block %d: content not a prefix or cut silently (%q):\n%s", i, note, sec)
				}
			}
		}
		if frames <= totalCap && len(text) > totalCap {
			t.Fatalf("%d bytes over total cap %d (frames %d)", len(text), totalCap, frames)
		}
	})
}
