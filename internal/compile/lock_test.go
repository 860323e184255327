//go:build unix

package compile

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A second claw on the same pod waits for the first and, past its wait,
// fails naming the holder; once the first is done the second proceeds.
func TestLockPodSerialisesClaws(t *testing.T) {
	dir := t.TempDir()
	release, err := LockPod(dir, "claw up", time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var heard string
	_, err = LockPod(dir, "claw compile", 300*time.Millisecond, func(h string) { heard = h })
	if err == nil {
		t.Fatal("a second claw got the pod's lock while the first held it")
	}
	me := "pid " + strconv.Itoa(os.Getpid()) + ", claw up"
	if !strings.HasPrefix(heard, me) || !strings.Contains(err.Error(), me) || !strings.Contains(err.Error(), LockFile) {
		t.Fatalf("waiting told %q, error %v: both must name the holder (%s) and the lock", heard, err, me)
	}
	done := make(chan error, 1)
	go func() {
		r, err := LockPod(dir, "claw compile", 5*time.Second, nil)
		if err == nil {
			r()
		}
		done <- err
	}()
	time.Sleep(150 * time.Millisecond)
	release()
	release() // twice is harmless
	if err := <-done; err != nil {
		t.Fatalf("the waiting claw did not get the lock once it was free: %v", err)
	}
}
