// Package syncbuf is a bytes.Buffer safe for concurrent use, for tests that read what goroutines
// or a child process write.
package syncbuf

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer collects what is written to it from many goroutines.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Lines returns the lines written so far, each without its newline; none when nothing was.
func (b *Buffer) Lines() []string {
	s := strings.TrimSuffix(b.String(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
