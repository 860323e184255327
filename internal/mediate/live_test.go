package mediate

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clawdapus/clawgo/internal/sse"
)

// A streaming runner of an agent with managed tools gets every round's
// text as the provider writes it, in one response lifecycle of its format
// (the official SDKs' accumulators rebuild one answer), and the next turn
// restores exactly what the provider saw around that answer.

func TestLiveTextAroundHiddenRounds(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.up.script = []step{
				{Text: "Looking it up. ", Calls: []tcall{call("c1", echo, `{"q":"a"}`)}, Usage: u(10, 4)},
				{Text: "Adding. ", Calls: []tcall{call("c2", add, `{"a":2,"b":3}`)}, Usage: u(20, 3)},
				{Text: "The sum is 5.", Usage: u(30, 5)},
				{Text: "Again: 5.", Usage: u(50, 2)},
			}
			res := h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, true, nil))
			got := k.decodeFinal(t, res, true)
			const visible = "Looking it up. Adding. The sum is 5."
			if got.Text != visible || len(got.Calls) != 0 {
				t.Fatalf("runner got text %q calls %v, want %q and no calls", got.Text, got.Calls, visible)
			}
			if got.Usage != u(60, 12) {
				t.Errorf("usage = %+v, want the sum over the rounds", got.Usage)
			}
			h.waitEntries(t, 1)
			up := h.up.requests()
			for i, r := range up[:3] {
				if !r.Stream {
					t.Errorf("round %d was not streamed upstream: %s", i+1, r.Raw)
				}
				if k.format() == "openai" && !strings.Contains(string(r.Raw), `"include_usage":true`) {
					t.Errorf("round %d does not ask for usage: %s", i+1, r.Raw)
				}
			}
			// The next turn: the runner sends back the one answer it got.
			next := []tmsg{hello[0], {Role: "assistant", Text: visible}, {Role: "user", Text: "again?"}}
			res = h.post(context.Background(), k.runnerRequest(next, []string{"shell"}, true, nil))
			k.decodeFinal(t, res, true)
			h.waitEntries(t, 2)
			m := h.up.requests()[3].Msgs
			var shape []string
			for _, msg := range m {
				s := msg.Role + ":" + msg.Text
				for _, c := range msg.Calls {
					s += "+" + c.Name
				}
				for _, r := range msg.Results {
					s += "=" + r.ID
				}
				shape = append(shape, s)
			}
			want := []string{"user:hello", "assistant:Looking it up. +" + echo, "tool:=c1", "assistant:Adding. +" + add, "tool:=c2", "assistant:The sum is 5.", "user:again?"}
			if !slices.Equal(shape, want) {
				t.Errorf("the next turn's upstream transcript =\n%v\nwant\n%v", shape, want)
			}
		})
	}
}

func TestLiveNativeCallInTheLastRound(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.up.script = []step{
				{Text: "Checking. ", Calls: []tcall{call("c1", echo, `{"q":"a"}`)}, Usage: u(10, 4)},
				{Text: "Running it.", Calls: []tcall{call("n1", "shell", `{"cmd":"ls"}`)}, Usage: u(20, 3)},
				{Text: "Listed.", Usage: u(40, 2)},
			}
			got := k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, []string{"shell"}, true, nil)), true)
			if got.Text != "Checking. Running it." || len(got.Calls) != 1 || got.Calls[0].Name != "shell" || got.Calls[0].ID != "n1" {
				t.Fatalf("runner got %+v, want the text of both rounds and its own call", got)
			}
			h.waitEntries(t, 1)
			next := []tmsg{hello[0], {Role: "assistant", Text: got.Text, Calls: got.Calls},
				{Role: "tool", Results: []tresult{{ID: "n1", Raw: "a b c"}}}}
			k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(next, []string{"shell"}, true, nil)), true)
			h.waitEntries(t, 2)
			m := h.up.requests()[2].Msgs
			if len(m) != 5 || m[1].Text != "Checking. " || len(m[1].Calls) != 1 || m[1].Calls[0].Name != echo ||
				m[3].Text != "Running it." || len(m[3].Calls) != 1 || m[3].Calls[0].ID != "n1" || m[4].Role != "tool" || m[4].Results[0].ID != "n1" {
				t.Errorf("the follow-up's upstream transcript = %+v", m)
			}
		})
	}
}

// events reads a runner stream's events.
func events(t *testing.T, r io.Reader) []sse.Event {
	t.Helper()
	var out []sse.Event
	for ev, err := range sse.Parse(r, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if len(ev.Data) > 0 {
			out = append(out, ev.Clone())
		}
	}
	return out
}

func TestLiveProviderErrorAfterTextIsInBand(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.up.script = []step{
				{Text: "First part. ", Calls: []tcall{call("c1", echo, `{"q":"a"}`)}},
				{Text: "never finished", FailAfter: 3},
			}
			res := h.post(context.Background(), k.runnerRequest(hello, nil, true, nil))
			if res.StatusCode != http.StatusOK {
				t.Fatalf("status %d", res.StatusCode)
			}
			evs := events(t, res.Body)
			var all strings.Builder
			for _, e := range evs {
				all.Write(e.Data)
			}
			if !strings.Contains(all.String(), "First part. ") {
				t.Fatalf("the first round's text did not reach the runner: %s", all.String())
			}
			last := evs[len(evs)-1]
			if last.Name != "error" && !strings.HasPrefix(string(last.Data), `{"error"`) {
				t.Fatalf("the stream does not end with the format's error event: %s %s", last.Name, last.Data)
			}
			if !strings.Contains(string(last.Data), "overloaded_error") {
				t.Errorf("the error event lacks the provider's type: %s", last.Data)
			}
			for _, e := range evs {
				if s := string(e.Data); s == "[DONE]" || strings.Contains(s, `"message_stop"`) || strings.Contains(s, `"response.completed"`) {
					t.Errorf("a failed turn's stream has its success end: %s", s)
				}
			}
			h.waitEntries(t, 1)
			if e := lastEntry(t, h); e.Status != "error" {
				t.Errorf("history status %q", e.Status)
			}
		})
	}
}

// The runner sees a round's text while the next round is still being
// written: it does not wait for the turn.
func TestLiveTextArrivesBeforeTheTurnEnds(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.up.script = []step{
				{Text: "Before the tool. ", Calls: []tcall{call("c1", echo, `{"q":"a"}`)}},
				{Hold: true},
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := h.post(ctx, k.runnerRequest(hello, nil, true, nil))
			br := bufio.NewReader(res.Body)
			var seen strings.Builder
			for !strings.Contains(seen.String(), "Before the tool. ") {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("stream ended before the first round's text: %v\n%s", err, seen.String())
				}
				seen.WriteString(line)
			}
			for len(h.up.requests()) < 2 { // round 2 is under way, held
				waitABit()
			}
			// The runner goes away: the held round is canceled.
			cancel()
			h.waitEntries(t, 1)
			deadline := time.Now().Add(4 * time.Second)
			for h.up.canceledCount() == 0 && time.Now().Before(deadline) {
				waitABit()
			}
			if h.up.canceledCount() != 1 {
				t.Fatalf("the round in flight was not canceled")
			}
		})
	}
}

// A runner that goes away while a managed call runs cancels the call.
func TestLiveDisconnectCancelsTheCallInFlight(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.agent.Tools.Tools[1].Execution.TimeoutMS = 0 // svc.slow now waits the policy's 30s
			h.up.script = []step{{Text: "One moment. ", Calls: []tcall{call("c1", slow, `{}`)}}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			res := h.post(ctx, k.runnerRequest(hello, nil, true, nil))
			buf := make([]byte, 16)
			if _, err := res.Body.Read(buf); err != nil {
				t.Fatal(err)
			}
			for h.svc.count("slow") == 0 {
				waitABit()
			}
			cancel()
			h.waitEntries(t, 1)
			deadline := time.Now().Add(4 * time.Second)
			for h.svc.count("slow-canceled") == 0 && time.Now().Before(deadline) {
				waitABit()
			}
			if h.svc.count("slow-canceled") != 1 {
				t.Fatalf("the service call was not canceled")
			}
		})
	}
}

// A provider that answers a streaming round without streaming is relayed
// in the same lifecycle.
func TestLiveProviderAnsweringJSON(t *testing.T) {
	for _, k := range kits {
		t.Run(string(k.format()), func(t *testing.T) {
			h := newHarness(t, k, harnessOptions{})
			h.up.jsonOnly = true
			h.up.script = []step{
				{Text: "A. ", Calls: []tcall{call("c1", echo, `{"q":"a"}`)}, Usage: u(1, 1)},
				{Text: "B.", Usage: u(2, 2)},
			}
			got := k.decodeFinal(t, h.post(context.Background(), k.runnerRequest(hello, nil, true, nil)), true)
			if got.Text != "A. B." || got.Usage != u(3, 3) {
				t.Errorf("runner got %+v", got)
			}
		})
	}
}

// A Responses runner that continues from the id of a lifecycle whose text
// began in a hidden round continues from the turn's final response, the
// one whose stored chain holds the hidden rounds.
func TestLiveResponsesContinuesFromTheFinalResponse(t *testing.T) {
	k := responsesKit{}
	h := newHarness(t, k, harnessOptions{})
	h.up.script = []step{
		{Text: "Looking. ", Calls: []tcall{call("c1", echo, `{"q":"a"}`)}},
		{Text: "Found it."},
		{Text: "Next."},
	}
	res := h.post(context.Background(), k.runnerRequest(hello, nil, true, nil))
	evs := events(t, res.Body)
	if !strings.Contains(string(evs[0].Data), `"id":"resp_0"`) {
		t.Fatalf("the lifecycle is not the first round's: %s", evs[0].Data)
	}
	h.waitEntries(t, 1)
	next := k.runnerRequest([]tmsg{{Role: "user", Text: "more?"}}, nil, true, map[string]any{"previous_response_id": "resp_0"})
	k.decodeFinal(t, h.post(context.Background(), next), true)
	h.waitEntries(t, 2)
	if got := string(topMember(h.up.requests()[2].Raw, "previous_response_id")); got != `"resp_1"` {
		t.Errorf("the next turn continues upstream from %s, want the final round's response", got)
	}
}

// A Chat Completions runner that did not ask for usage gets none, while
// every round still asks the provider for it: the turn's usage is counted.
func TestLiveOpenAIUsageOnlyWhenAsked(t *testing.T) {
	k := openaiKit{}
	h := newHarness(t, k, harnessOptions{})
	h.up.script = []step{
		{Text: "A. ", Calls: []tcall{call("c1", echo, `{"q":"a"}`)}, Usage: u(5, 1)},
		{Text: "B.", Usage: u(7, 2)},
	}
	res := h.post(context.Background(), k.runnerRequest(hello, nil, true, map[string]any{"stream_options": nil}))
	evs := events(t, res.Body)
	finishes := 0
	for _, e := range evs {
		if strings.Contains(string(e.Data), `"usage"`) {
			t.Errorf("a usage chunk the runner did not ask for: %s", e.Data)
		}
		if strings.Contains(string(e.Data), `"finish_reason":"`) {
			finishes++
		}
	}
	if finishes != 1 || string(evs[len(evs)-1].Data) != "[DONE]" {
		t.Errorf("%d finish_reason chunks, last event %s", finishes, evs[len(evs)-1].Data)
	}
	h.waitEntries(t, 1)
	for i, r := range h.up.requests() {
		if !strings.Contains(string(r.Raw), `"include_usage":true`) {
			t.Errorf("round %d did not ask for usage: %s", i+1, r.Raw)
		}
	}
	if e := lastEntry(t, h); e.Usage.PromptTokens != 12 || e.Usage.CompletionTokens != 3 {
		t.Errorf("history usage %+v, want the rounds' sum", e.Usage)
	}
}
