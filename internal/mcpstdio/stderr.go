package mcpstdio

import (
	"bytes"
	"log/slog"
	"sync"
)

// maxStderrLine bounds one logged line; a child that prints megabytes with no
// newline gets split rather than buffered without limit.
const maxStderrLine = 16 << 10

// lineLogger is the child's stderr: it logs each complete line, tagged with
// the child's pid, as the sidecar's own log output (spec 002: "logs stderr
// through the sidecar container logs").
type lineLogger struct {
	logger *slog.Logger

	mu  sync.Mutex
	pid int // known only after start; early lines log pid 0
	buf []byte
}

func (l *lineLogger) setPID(pid int) {
	l.mu.Lock()
	l.pid = pid
	l.mu.Unlock()
}

func newLineLogger(l *slog.Logger) *lineLogger { return &lineLogger{logger: l} }

func (l *lineLogger) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			l.buf = append(l.buf, p...)
			for len(l.buf) >= maxStderrLine {
				l.emit(l.buf[:maxStderrLine])
				l.buf = append(l.buf[:0], l.buf[maxStderrLine:]...)
			}
			break
		}
		l.buf = append(l.buf, p[:i]...)
		l.emit(l.buf)
		l.buf = l.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

// Flush logs a trailing line without a newline, once the child has exited.
func (l *lineLogger) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit(l.buf)
		l.buf = l.buf[:0]
	}
}

func (l *lineLogger) emit(line []byte) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	l.logger.Info("child stderr: "+string(line), "pid", l.pid)
}
