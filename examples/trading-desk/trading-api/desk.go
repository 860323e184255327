package main

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

// Received is one request as the service saw it.
type Received struct {
	Time       time.Time       `json:"time"`
	Method     string          `json:"method"`
	Path       string          `json:"path"`
	ClawID     string          `json:"claw_id"`
	Authorized bool            `json:"authorized"`
	Body       json.RawMessage `json:"body,omitempty"`
}

// Trade is a filled paper order.
type Trade struct {
	ID       string  `json:"trade_id"`
	ClawID   string  `json:"claw_id"`
	Symbol   string  `json:"symbol"`
	Side     string  `json:"side"`
	Quantity float64 `json:"quantity"`
	Price    float64 `json:"price"`
	Status   string  `json:"status"`
}

type desk struct {
	token []byte
	now   func() time.Time

	mu       sync.Mutex
	received []Received
	trades   []Trade
	cash     map[string]float64
}

var prices = map[string]float64{"AAPL": 190.5, "MSFT": 415.25, "NVDA": 122.75, "SPY": 560.1}

func newDesk(token string, now func() time.Time) *desk {
	return &desk{token: []byte(token), now: now, cash: map[string]float64{}}
}

func (d *desk) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, 200, map[string]string{"status": "ok"}) })
	mux.HandleFunc("GET /api/v1/market_context/{claw_id}", d.guard(d.marketContext))
	mux.HandleFunc("GET /api/v1/market-summary", d.guard(d.marketSummary))
	mux.HandleFunc("POST /api/v1/trades", d.guard(d.executeTrade))
	mux.HandleFunc("GET /api/v1/risk_report", d.guard(d.riskReport))
	// Operator view: what the service received. Not in the agents' tools.
	mux.HandleFunc("GET /api/v1/received", d.listReceived)
	return mux
}

// guard records every request and enforces the bearer the pod projects.
func (d *desk) guard(next func(http.ResponseWriter, *http.Request, []byte)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// Bounded: MaxBytesReader stops the read at 64 KiB.
		body, _ := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		got := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		ok := subtle.ConstantTimeCompare([]byte(got), d.token) == 1
		rec := Received{Time: d.now().UTC(), Method: r.Method, Path: r.URL.RequestURI(), ClawID: r.Header.Get("X-Claw-ID"), Authorized: ok}
		if json.Valid(body) {
			rec.Body = body
		}
		d.mu.Lock()
		d.received = append(d.received, rec)
		d.mu.Unlock()
		log.Printf("received %s %s claw_id=%q authorized=%v body=%s", rec.Method, rec.Path, rec.ClawID, ok, rec.Body)
		if !ok {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
			return
		}
		next(w, r, body)
	}
}

func (d *desk) balance(claw string) float64 {
	if _, ok := d.cash[claw]; !ok {
		d.cash[claw] = 50000
	}
	return d.cash[claw]
}

func (d *desk) marketContext(w http.ResponseWriter, r *http.Request, _ []byte) {
	claw := r.PathValue("claw_id")
	d.mu.Lock()
	defer d.mu.Unlock()
	positions := map[string]float64{}
	for _, t := range d.trades {
		if t.ClawID != claw {
			continue
		}
		if t.Side == "buy" {
			positions[t.Symbol] += t.Quantity
		} else {
			positions[t.Symbol] -= t.Quantity
		}
	}
	bal := d.balance(claw)
	writeJSON(w, 200, map[string]any{"claw_id": claw, "balance": bal, "buying_power": bal, "positions": positions, "prices": prices})
}

func (d *desk) marketSummary(w http.ResponseWriter, _ *http.Request, _ []byte) {
	syms := make([]string, 0, len(prices))
	for s := range prices {
		syms = append(syms, s)
	}
	sort.Strings(syms)
	var b strings.Builder
	fmt.Fprintf(&b, "---\nfeed: market-summary\nrefreshed: %s\nttl: 30\n---\n", d.now().UTC().Format(time.RFC3339))
	b.WriteString("Market open. Last prices:\n")
	for _, s := range syms {
		fmt.Fprintf(&b, "- %s %.2f\n", s, prices[s])
	}
	b.WriteString("Risk desk: max order 100 shares per symbol.\n")
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

func (d *desk) executeTrade(w http.ResponseWriter, r *http.Request, body []byte) {
	var order struct {
		Symbol   string  `json:"symbol"`
		Side     string  `json:"side"`
		Quantity float64 `json:"quantity"`
	}
	if err := json.Unmarshal(body, &order); err != nil {
		writeJSON(w, 400, map[string]string{"error": "body must be {symbol, side, quantity}"})
		return
	}
	price, known := prices[strings.ToUpper(order.Symbol)]
	switch {
	case !known:
		writeJSON(w, 422, map[string]string{"error": "unknown symbol " + order.Symbol})
		return
	case order.Side != "buy" && order.Side != "sell":
		writeJSON(w, 422, map[string]string{"error": "side must be buy or sell"})
		return
	case order.Quantity <= 0 || order.Quantity > 100:
		writeJSON(w, 422, map[string]string{"error": "quantity must be between 1 and 100"})
		return
	}
	claw := r.Header.Get("X-Claw-ID")
	d.mu.Lock()
	defer d.mu.Unlock()
	cost := price * order.Quantity
	if order.Side == "buy" {
		d.cash[claw] = d.balance(claw) - cost
	} else {
		d.cash[claw] = d.balance(claw) + cost
	}
	t := Trade{ID: fmt.Sprintf("T%04d", len(d.trades)+1), ClawID: claw, Symbol: strings.ToUpper(order.Symbol), Side: order.Side, Quantity: order.Quantity, Price: price, Status: "filled"}
	d.trades = append(d.trades, t)
	writeJSON(w, 201, t)
}

func (d *desk) listReceived(w http.ResponseWriter, _ *http.Request) {
	d.mu.Lock()
	defer d.mu.Unlock()
	writeJSON(w, 200, map[string]any{"received": d.received, "trades": d.trades})
}

// riskReport is the day's risk report: one line per book and hour, about
// 300 KB of text, far over a tool result's cap, with two breaches to find
// in it. cllama keeps it whole behind a handle (claw.read_result).
func (d *desk) riskReport(w http.ResponseWriter, _ *http.Request, _ []byte) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(riskReportText())
}

func riskReportText() []byte {
	var b bytes.Buffer
	b.WriteString("RISK REPORT: every book, every hour, exposure against limit\n")
	books := []string{"rates", "credit", "equities", "fx", "commodities", "vol"}
	for i := 0; i < 4800; i++ {
		book, hour := books[i%len(books)], i/len(books)%24
		status := "within limit"
		if i == 1733 || i == 3901 {
			status = "BREACH: exposure over limit, desk head notified"
		}
		fmt.Fprintf(&b, "%05d book=%-11s hour=%02d exposure=%7d limit=%7d %s\n", i, book, hour, 40000+i*7%50000, 100000, status)
	}
	return b.Bytes()
}
