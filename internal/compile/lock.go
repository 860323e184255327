package compile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// LockFile is the lock one claw holds while it compiles, stages or
// applies a pod, relative to the pod's directory.
const LockFile = RuntimeDir + "/claw.lock"

// errLocked is what tryLock answers while another holds the lock.
var errLocked = errors.New("locked")

// LockPod takes the pod's lock: two claws working on one pod at once
// (two terminals running `claw up`, a script and an operator) would
// interleave their writes to the staging directory and their switches of
// the live context. While another process holds it, LockPod waits up to
// wait, calling waiting once with the holder's description, then fails
// naming it. The lock is the kernel's (flock): it is released when its
// holder exits, however it exits. what describes this claw to others.
func LockPod(dir, what string, wait time.Duration, waiting func(holder string)) (release func(), err error) {
	if err := os.MkdirAll(filepath.Join(dir, RuntimeDir), 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	told := false
	for {
		err := tryLock(f)
		if err == nil {
			break
		}
		if !errors.Is(err, errLocked) {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		holder := readHolder(path)
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("another claw (%s) is still working on this pod after %s; wait for it to finish, or stop it (the lock is %s and goes when that process exits)", holder, wait, LockFile)
		}
		if !told && waiting != nil {
			waiting(holder)
			told = true
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The holder's description, for whoever waits next.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(fmt.Sprintf("pid %d, %s, since %s\n", os.Getpid(), what, time.Now().UTC().Format(time.RFC3339))), 0)
	var once bool
	return func() {
		if once {
			return
		}
		once = true
		_ = f.Truncate(0)
		_ = unlock(f)
		_ = f.Close()
	}, nil
}

func readHolder(path string) string {
	b, err := os.ReadFile(path)
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		return s
	}
	return "a process that has not said which"
}
