// Command netprobe is the end-to-end test's view from inside an agent
// container: it serves a port (so other agents have something to fail to
// reach), tries to reach targets, and reads the container's routing table.
// Images are FROM scratch, so this one static binary is all there is.
//
//	netprobe serve [-addr :9000]
//	netprobe probe [-timeout 1s] host:port | http://host:port/path ...
//	netprobe routes
//
// probe and routes print one JSON document on stdout.
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: netprobe serve|probe|routes ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "probe":
		err = probe(os.Args[2:])
	case "routes":
		err = routes()
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "netprobe:", err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	addr := fs.String("addr", ":9000", "listen address")
	_ = fs.Parse(args)
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = fmt.Fprintf(c, "netprobe %s\n", host)
			_ = c.Close()
		}
	}()
	// PID 1 in a container gets no default signal handling.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	return l.Close()
}

// Result is one probed target.
type Result struct {
	Target string `json:"target"`
	// Outcome is "ok", "no-such-host", "refused", "timeout", "unreachable"
	// or "error".
	Outcome string `json:"outcome"`
	Status  int    `json:"status,omitempty"`
	Error   string `json:"error,omitempty"`
	Millis  int64  `json:"ms"`
}

func probe(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ExitOnError)
	timeout := fs.Duration("timeout", time.Second, "per-target limit")
	_ = fs.Parse(args)
	// Targets are probed at once: most of them are expected to time out.
	out := make([]Result, len(fs.Args()))
	var wg sync.WaitGroup
	for i, target := range fs.Args() {
		wg.Go(func() {
			start := time.Now()
			r := Result{Target: target}
			var err error
			if strings.HasPrefix(target, "http://") {
				r.Status, err = httpGet(target, *timeout)
			} else {
				err = dial(target, *timeout)
			}
			r.Millis = time.Since(start).Milliseconds()
			r.Outcome = classify(err)
			if err != nil {
				r.Error = err.Error()
			}
			out[i] = r
		})
	}
	wg.Wait()
	return json.NewEncoder(os.Stdout).Encode(out)
}

func dial(target string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return err
	}
	return c.Close()
}

func httpGet(target string, timeout time.Duration) (int, error) {
	client := &http.Client{Timeout: timeout}
	resp, err := client.Get(target)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	return resp.StatusCode, nil
}

func classify(err error) string {
	var dnsErr *net.DNSError
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return "no-such-host"
	case errors.As(err, &dnsErr):
		// A resolver that cannot answer a name outside the pod.
		return "no-such-host"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EHOSTUNREACH):
		return "unreachable"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), isTimeout(err):
		return "timeout"
	default:
		return "error"
	}
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// Route is one IPv4 route of the container.
type Route struct {
	Iface       string `json:"iface"`
	Destination string `json:"destination"`
	Gateway     string `json:"gateway"`
	Mask        string `json:"mask"`
}

// routes prints the IPv4 routing table as the kernel has it
// (/proc/net/route: little-endian hex addresses).
func routes() error {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return err
	}
	defer f.Close()
	out := []Route{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		dst, err1 := hexAddr(fields[1])
		gw, err2 := hexAddr(fields[2])
		mask, err3 := hexAddr(fields[7])
		if err := errors.Join(err1, err2, err3); err != nil {
			return fmt.Errorf("/proc/net/route: %q: %w", sc.Text(), err)
		}
		out = append(out, Route{Iface: fields[0], Destination: dst, Gateway: gw, Mask: mask})
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func hexAddr(s string) (string, error) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 4 {
		return "", fmt.Errorf("bad address %q", s)
	}
	var a [4]byte
	binary.BigEndian.PutUint32(a[:], binary.LittleEndian.Uint32(b))
	return netip.AddrFrom4(a).String(), nil
}
