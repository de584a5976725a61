package sessions

import (
	"crypto/tls"
	"errors"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"
)

// alive reports whether an idle session's connection still serves: the server sends an idle
// session nothing but the FATAL error and the end of a session it ended (pg_terminate_backend,
// a shutdown), so anything there is to read, or an error, says it is gone. It reads nothing and
// does not wait: one system call.
//
// A session its server ended while it was idle would otherwise fail the next run lent it, which
// would be recorded as an error though nothing of it ran (the attacker review of stop 26).
func alive(conn *pgconn.PgConn) bool {
	if conn.IsClosed() || conn.Frontend().ReadBufferLen() > 0 {
		return false
	}
	nc := conn.Conn()
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true // no socket to look at: the run finds out
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	gone := false
	err = raw.Read(func(fd uintptr) bool {
		var b [1]byte
		n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		// n > 0: a message; n == 0 without an error: the end of the connection.
		gone = n >= 0 && err == nil || err != nil && !errors.Is(err, syscall.EAGAIN)
		return true // done, whatever it found: never wait for the socket
	})
	return err == nil && !gone
}

// closeDead closes the idle sessions of line k that are gone (alive), so that warming opens new
// ones ahead of the fire rather than the fire finding them gone. b.mu is held.
func (b *Budget) closeDead(k key) {
	live := b.idle[:0]
	for _, s := range b.idle {
		if s.key == k && !alive(s.Conn.PgConn()) {
			b.closed(k.owner)
			b.closing = append(b.closing, s.Conn)
			continue
		}
		live = append(live, s)
	}
	clear(b.idle[len(live):])
	b.idle = live
}
