package testproc

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium finds a Chromium binary (CLAW_CHROMIUM, else Debian's package
// "chromium", which .ci/run installs when missing, or another name it goes
// by) or skips the test, saying so.
func Chromium(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("CLAW_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	tb.Skip("no chromium binary (apt-get install chromium, or set CLAW_CHROMIUM): the browser tests are skipped")
	return ""
}

// Browser starts a real headless Chromium for the test (a profile of its
// own, stopped when tb ends) and returns the context chromedp drives it
// with, bounded to two minutes. Without Chromium the test is skipped.
func Browser(tb testing.TB) context.Context {
	tb.Helper()
	bin := Chromium(tb)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(tb.TempDir()),
	)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	tb.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	tb.Cleanup(cancel2)
	ctx, cancel3 := context.WithTimeout(ctx, 2*time.Minute)
	tb.Cleanup(cancel3)
	if err := chromedp.Do(ctx); err != nil {
		tb.Fatalf("starting %s: %v", bin, err)
	}
	return ctx
}
