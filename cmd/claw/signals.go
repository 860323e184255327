package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// SignalRelay routes the interrupts claw receives (SIGINT, SIGTERM). While
// compose runs they go to compose, one for one, and nowhere else: compose
// decides what an interrupt means (the first stops the pod gracefully,
// the second kills it). Otherwise the first cancels claw's context.
type SignalRelay struct {
	mu     sync.Mutex
	child  func(os.Signal)
	cancel context.CancelFunc
	ch     chan os.Signal
	done   chan struct{}
}

// NewSignalRelay catches SIGINT and SIGTERM until Stop; cancel is called
// for an interrupt that arrives while no child is attached.
func NewSignalRelay(cancel context.CancelFunc) *SignalRelay {
	r := &SignalRelay{cancel: cancel, ch: make(chan os.Signal, 4), done: make(chan struct{})}
	signal.Notify(r.ch, os.Interrupt, syscall.SIGTERM)
	go r.loop()
	return r
}

func (r *SignalRelay) loop() {
	defer close(r.done)
	for sig := range r.ch {
		r.deliver(sig)
	}
}

func (r *SignalRelay) deliver(sig os.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.child != nil {
		r.child(sig)
		return
	}
	r.cancel()
}

// Attach sends every interrupt claw receives to forward until the
// returned function is called.
func (r *SignalRelay) Attach(forward func(os.Signal)) (detach func()) {
	if r == nil {
		return func() {}
	}
	r.mu.Lock()
	r.child = forward
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.child = nil
		r.mu.Unlock()
	}
}

// Stop restores the default handling of the signals.
func (r *SignalRelay) Stop() {
	signal.Stop(r.ch)
	close(r.ch)
	<-r.done
}
