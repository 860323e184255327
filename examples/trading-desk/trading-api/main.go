// Command trading-api is the example pod's service: a tiny paper-trading desk
// that describes itself with a claw.describe v2 descriptor (two tools, a feed,
// a skill, bearer auth). It keeps everything in memory and records every
// request it receives so an operator (and the end-to-end test) can see what
// governed agents actually did.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", envOr("TRADING_API_ADDR", ":4000"), "listen address")
	flag.Parse()
	token := os.Getenv("TRADING_API_TOKEN")
	if token == "" {
		log.Fatal("trading-api: TRADING_API_TOKEN must be set: every call needs the bearer the pod projects")
	}
	desk := newDesk(token, time.Now)
	srv := &http.Server{Addr: *addr, Handler: desk.routes(), ReadHeaderTimeout: 5 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("trading-api listening on %s", *addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
