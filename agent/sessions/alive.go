package sessions

import (
	"context"
	"crypto/tls"
	"errors"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// maxPending is how many messages alive reads from an idle session at most: past them, the run
// reads the rest, as it would without the look.
const maxPending = 64

// lookFor bounds the reading of one look at idle sessions (alive, for all it looks at): it runs with
// the budget's lock held, which a role flooding its own listening sessions with notifications must
// not hold for long (the attacker review of the look).
const lookFor = time.Millisecond

// alive reports whether an idle session still serves. The server sends an idle session little: a
// notification to a channel it listens on (a task's session kept with its state), a notice, or the
// FATAL error and the end of a session it ended (pg_terminate_backend, a shutdown). So when there
// is something to read, alive reads it through pgconn until deadline at most, as a run would
// (notifications and notices dropped), until nothing is left or the session turns out ended; what
// is left by then the run reads. With nothing to read, the usual case, it costs one system call and
// waits for nothing.
//
// A session its server ended while it was idle would otherwise fail the next run lent it, which
// would be recorded as an error though nothing of it ran (the attacker review of stop 26).
func alive(conn *pgconn.PgConn, deadline time.Time) bool {
	for range maxPending {
		pending, open := pendingInput(conn)
		if !open {
			return false
		}
		if !pending || !time.Now().Before(deadline) {
			return true
		}
		if conn.Conn().SetReadDeadline(deadline) != nil {
			return false
		}
		_, err := conn.ReceiveMessage(context.Background()) // bounded by the deadline
		if conn.IsClosed() {
			return false // a FATAL error, or the connection broke
		}
		if conn.Conn().SetReadDeadline(time.Time{}) != nil {
			return false
		}
		if err != nil {
			return true // a timeout: a message not all there yet, which the run reads
		}
	}
	return true
}

// pendingInput reports whether conn has something to read, without reading it or waiting, and
// whether its connection is still open: not at its end, nor failed.
func pendingInput(conn *pgconn.PgConn) (pending, open bool) {
	if conn.IsClosed() {
		return false, false
	}
	if conn.Frontend().ReadBufferLen() > 0 {
		return true, true
	}
	nc := conn.Conn()
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn() // bytes crypto/tls holds already are missed: the run finds them
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false, true // no socket to look at: the run finds out
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false, false
	}
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		switch {
		case rerr == nil && n > 0:
			pending, open = true, true
		case rerr == nil: // n == 0: the end of the connection
			pending, open = false, false
		case errors.Is(rerr, syscall.EAGAIN):
			pending, open = false, true
		default:
			pending, open = false, false
		}
		return true // done, whatever it found: never wait for the socket
	})
	if err != nil {
		return false, false
	}
	return pending, open
}

// closeDead closes the idle sessions of line k that are gone (alive), so that warming opens new
// ones ahead of the fire rather than the fire finding them gone. b.mu is held.
func (b *Budget) closeDead(k key) {
	deadline := time.Now().Add(lookFor)
	live := b.idle[:0]
	for _, s := range b.idle {
		if s.key == k && !alive(s.Conn.PgConn(), deadline) {
			b.closeSession(s)
			continue
		}
		live = append(live, s)
	}
	clear(b.idle[len(live):])
	b.idle = live
}
