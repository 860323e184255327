// Command floorproxy is the floor cllama's figures are measured against: a
// bare Go reverse proxy (httputil.ReverseProxy with a keep-alive pool; no
// identity, history, audit or rewriting), run as a process of its own.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	upstream := flag.String("upstream", "", "base URL requests are relayed to")
	flag.Parse()
	u, err := url.Parse(*upstream)
	if err != nil || u.Host == "" {
		log.Fatalf("-upstream: want a base URL, got %q", *upstream)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 90 * time.Second}
	rp.FlushInterval = -1 // streams are flushed as they come, as cllama does
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "floorproxy: listening on %s\n", ln.Addr())
	log.Fatal(http.Serve(ln, rp))
}
