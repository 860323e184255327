package proxy

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// An agent that fans out past its slots is queued, not refused: 256
// concurrent conversations of one agent (default settings: 32 slots, 512
// waiting) all get their answers, and while all 32 of its slots are held
// and 224 requests wait, another agent's request is served at once (it
// waits behind nobody's queue).
func TestFanOutIsQueuedNotRefused(t *testing.T) {
	p, arrived, release := heldPod(t)
	writeFile(t, filepath.Join(p.root, "bob", "metadata.json"), `{"token":"bob:s3cret-bob"}`)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 300, MaxConnsPerHost: 0}}
	post := func(token string) int {
		req, _ := http.NewRequest(http.MethodPost, p.front.URL+pathChat, strings.NewReader(requestBody(formatOpenAI, "fake", false)))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	const n = 256
	codes := make(chan int, n)
	for range n {
		go func() { codes <- post(aliceToken) }()
	}
	for range DefaultMaxAgentConcurrency {
		<-arrived // alice's slots are all held upstream
	}
	// Bob's request reaches the provider although alice has 224 waiting.
	bob := make(chan int, 1)
	go func() { bob <- post("bob:s3cret-bob") }()
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("another agent's request waited behind alice's queue")
	}
	release()
	go func() { // the requests still to come announce themselves too
		for range arrived {
		}
	}()
	if c := <-bob; c != http.StatusOK {
		t.Fatalf("bob: %d", c)
	}
	refused := 0
	for range n {
		if c := <-codes; c != http.StatusOK {
			refused++
		}
	}
	if refused != 0 {
		t.Fatalf("%d of %d fan-out requests were not answered 200", refused, n)
	}
}

// A full queue, or a wait past CLLAMA_QUEUE_WAIT, is still a 429 naming
// both settings; the slot a finished request gives back goes to the
// agent's first waiting request.
func TestQueueBoundsAndOrder(t *testing.T) {
	a := newAdmission(1<<30, 1<<30, 1, 2, 200*time.Millisecond)
	ctx := t.Context()
	if !a.enter(ctx, "alice") {
		t.Fatal("first slot")
	}
	var order []int
	var mu sync.Mutex
	var wg sync.WaitGroup
	var got atomic.Int32
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if a.enter(ctx, "alice") {
				got.Add(1)
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				a.leave("alice")
			}
		}()
		for waiting(a, "alice") != i+1 {
			time.Sleep(time.Millisecond)
		}
	}
	if a.enter(ctx, "alice") {
		t.Fatal("a third waiting request was admitted past a queue of 2")
	}
	a.leave("alice")
	wg.Wait()
	if got.Load() != 2 || fmt.Sprint(order) != "[0 1]" {
		t.Fatalf("admitted %d, in order %v; want 2 in arrival order", got.Load(), order)
	}
	// Nobody leaves: a waiting request gives up after the wait.
	if !a.enter(ctx, "alice") {
		t.Fatal("slot")
	}
	start := time.Now()
	if a.enter(ctx, "alice") {
		t.Fatal("admitted without a free slot")
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatal("gave up before the queue wait")
	}
	if waiting(a, "alice") != 0 {
		t.Fatal("a request that gave up is still queued")
	}
}

func waiting(a *admission, agent string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queues[agent])
}

// BenchmarkFairAdmission prints another agent's request latency while one
// agent runs 256 conversations at once, as a multiple of that latency
// with the pod idle (the bar: within 2×). The provider answers
// each request after 5 ms.
func BenchmarkFairAdmission(b *testing.B) {
	p := newPod(b)
	writeFile(b, filepath.Join(p.root, "bob", "metadata.json"), `{"token":"bob:s3cret-bob"}`)
	p.up.setHandler(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		time.Sleep(5 * time.Millisecond)
		defaultProvider(w, r.Clone(r.Context()))
	})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 400}}
	post := func(token string) time.Duration {
		start := time.Now()
		req, _ := http.NewRequest(http.MethodPost, p.front.URL+pathChat, strings.NewReader(requestBody(formatOpenAI, "fake", false)))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			b.Fatalf("status %d", res.StatusCode)
		}
		return time.Since(start)
	}
	median := func() time.Duration {
		var d []time.Duration
		for range 40 {
			d = append(d, post("bob:s3cret-bob"))
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	for b.Loop() {
		idle := median()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 256 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
						post(aliceToken)
					}
				}
			}()
		}
		time.Sleep(200 * time.Millisecond)
		busy := median()
		close(stop)
		wg.Wait()
		b.ReportMetric(float64(idle.Microseconds()), "idle-µs")
		b.ReportMetric(float64(busy.Microseconds()), "burst-µs")
		b.ReportMetric(float64(busy)/float64(idle), "burst-x-idle")
	}
}
