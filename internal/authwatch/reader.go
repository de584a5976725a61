package authwatch

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"sync/atomic"
)

// The authentication request codes of an AuthenticationRequest ('R') message.
const (
	authOK           = 0
	authCleartext    = 3
	authMD5          = 5
	authSASL         = 10
	authSASLContinue = 11
)

// Reader reads the server's messages of one attempt as they pass, until the session is ready for
// queries or refused, or for the session's life with Limits.Session. A SCRAM challenge over its
// bound, or past MaxLogins, ends the reading with an error before the client has all of it, so the
// client never computes it; that holds also for a challenge after AuthenticationOk, which pgx
// would answer too.
type Reader struct {
	r             io.Reader
	conn          net.Conn // closed on a refusal; nil when unknown
	addr          string   // the server's TCP address, "" when not one
	closed        bool     // by a refusal
	read          bool     // the first Read came: the attempt is marked attempting
	connected     atomic.Bool
	bounds        *bounds
	passwordAsked bool            // before the server accepted the session
	accepted      bool            // the server sent AuthenticationOk
	ready         bool            // the startup ended
	stopped       bool            // nothing more to look at
	err           error           // the refusal, returned by every later Read
	names         map[string]bool // the parameters reported, with Limits.Session
	header        [5]byte         // the message being read: its type and length
	have          int             // bytes of header read
	size          int             // the body's length
	left          int             // bytes of the body still to pass
	body          []byte          // the body of a message looked at, its first maxChallenge+4 bytes
}

// newReader returns r watched within b, reading conn: an attempt past MaxAttempts is refused at
// its first read.
func newReader(r io.Reader, conn net.Conn, b *bounds) *Reader {
	watched := &Reader{r: r, conn: conn, bounds: b}
	if conn != nil {
		if addr := conn.RemoteAddr(); addr != nil && addr.Network() == "tcp" {
			watched.addr = addr.String()
		}
	}
	if b.MaxAttempts > 0 && int(b.attempts.Add(1)) > b.MaxAttempts {
		watched.err = &BoundError{Bound: BoundAttempts, Max: b.MaxAttempts}
	}
	return watched
}

// Connected tells the watch, with Limits.Session, that the session is connected: the checks of
// the caller's ValidateConnect passed, and the bytes read no longer count as the startup's.
func (c *Reader) Connected() { c.connected.Store(true) }

// Logins returns the SCRAM logins computed so far by the attempts of the Reader's connection, with
// Limits.MaxLogins (0 without).
func (c *Reader) Logins() int {
	if c.bounds.MaxLogins <= 0 {
		return 0
	}
	return min(int(c.bounds.logins.Load()), c.bounds.MaxLogins) // one over the bound was refused
}

// PasswordAsked reports whether the server asked for a password (cleartext, MD5 or SCRAM) before
// it accepted the session.
func (c *Reader) PasswordAsked() bool { return c.passwordAsked }

func (c *Reader) Read(p []byte) (int, error) {
	if !c.read { // past a TLS handshake, which pgx retries without TLS when it fails
		c.read = true
		c.bounds.mark(c.addr, attempting)
	}
	if c.err != nil {
		c.refuse(c.err) // an attempt past the bound, at its first read
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if c.stopped {
		return n, err
	}
	if werr := c.watch(p[:n]); werr != nil {
		c.refuse(werr)
		return 0, werr
	}
	return n, err
}

// refuse ends the reading with err and closes the connection; the attempt stays broken off, so
// its server is not dialled again by this connection.
func (c *Reader) refuse(err error) {
	c.err = err
	c.bounds.mark(c.addr, attempting) // also past ready: no cancel request to it
	if c.conn != nil && !c.closed {
		c.closed = true
		c.conn.Close()
	}
}

// watch reads b, the next bytes from the server, and returns the refusal of what they hold.
func (c *Reader) watch(b []byte) error {
	for len(b) > 0 && !c.stopped {
		if c.have < len(c.header) {
			k := copy(c.header[c.have:], b)
			c.have += k
			b = b[k:]
			c.count(k)
			if c.have < len(c.header) {
				continue
			}
			if err := c.begin(); err != nil || c.stopped {
				return err
			}
		} else {
			take := min(c.left, len(b))
			if keep := c.kept(); keep > len(c.body) {
				c.body = append(c.body, b[:min(take, keep-len(c.body))]...)
			}
			c.left -= take
			b = b[take:]
			c.count(take)
		}
		if c.left == 0 {
			c.have = 0
			if err := c.end(); err != nil {
				return err
			}
		}
	}
	return nil
}

// count counts n bytes of the startup.
func (c *Reader) count(n int) {
	if c.starting() {
		c.bounds.startup.Add(int64(n))
	}
}

// starting reports whether the session is not ready yet, or with Limits.Session not connected.
func (c *Reader) starting() bool {
	return !c.ready || c.bounds.Session && !c.connected.Load()
}

// kept returns how many bytes of the body of the message being read are kept to be looked at:
// those of an authentication request up to a challenge's longest, all of a parameter report with
// Limits.Session (at most MaxParameter), none of another.
func (c *Reader) kept() int {
	switch {
	case c.header[0] == 'R' && !c.ready:
		return maxChallenge + 4
	case c.header[0] == 'S' && c.bounds.Session:
		return MaxParameter
	}
	return 0
}

// begin looks at the header just read, before the client reads the body.
func (c *Reader) begin() error {
	length := binary.BigEndian.Uint32(c.header[1:]) // the body's and its own 4 bytes
	if length < 4 {                                 // not a message: the protocol reader refuses it
		c.stopped = true
		return nil
	}
	size := int64(length) - 4
	if c.starting() && size > int64(c.bounds.MaxStartup)-c.bounds.startup.Load() {
		return &BoundError{Bound: BoundStartup, Max: c.bounds.MaxStartup}
	}
	if c.header[0] == 'S' && c.bounds.Session && size > MaxParameter {
		return &BoundError{Bound: BoundParameter, Max: MaxParameter}
	}
	c.size, c.left, c.body = int(size), int(size), c.body[:0]
	return nil
}

// end looks at the message whose last byte was just read.
func (c *Reader) end() error {
	switch c.header[0] {
	case 'E', 'Z': // the server refused the session, or it is ready for queries
		if !c.ready {
			c.ready = true
			c.stopped = !c.bounds.Session || c.header[0] == 'E'
			state := readied
			if c.header[0] == 'E' {
				state = declined
			}
			c.bounds.mark(c.addr, state)
		}
	case 'S':
		if !c.bounds.Session {
			return nil
		}
		name, _, _ := bytes.Cut(c.body, []byte{0})
		if c.names[string(name)] {
			return nil
		}
		if len(c.names) >= MaxParameters {
			return &BoundError{Bound: BoundParameters, Max: MaxParameters}
		}
		if c.names == nil {
			c.names = map[string]bool{}
		}
		c.names[string(name)] = true
	case 'R':
		if c.ready || len(c.body) < 4 {
			return nil // not an authentication request: the protocol reader refuses it
		}
		return c.authentication()
	}
	return nil
}

// authentication looks at an authentication request.
func (c *Reader) authentication() error {
	switch binary.BigEndian.Uint32(c.body) {
	case authOK:
		c.accepted = true
	case authCleartext, authMD5, authSASL:
		c.passwordAsked = c.passwordAsked || !c.accepted
	case authSASLContinue:
		if c.size > maxChallenge+4 {
			return ErrBadChallenge
		}
		n, err := Iterations(c.body[4:])
		if err != nil {
			return err
		}
		if n > c.bounds.MaxIterations {
			return &IterationsError{Iterations: n, Max: c.bounds.MaxIterations}
		}
		if c.bounds.MaxLogins > 0 && int(c.bounds.logins.Add(1)) > c.bounds.MaxLogins {
			return &BoundError{Bound: BoundLogins, Max: c.bounds.MaxLogins}
		}
	}
	return nil
}

// Iterations returns the iteration count of a SCRAM server-first-message, read as pgx reads it:
// r=NONCE,s=SALT,i=COUNT with nothing after the count.
func Iterations(challenge []byte) (int, error) {
	rest, ok := bytes.CutPrefix(challenge, []byte("r="))
	if !ok {
		return 0, ErrBadChallenge
	}
	if _, rest, ok = bytes.Cut(rest, []byte(",")); !ok {
		return 0, ErrBadChallenge
	}
	if rest, ok = bytes.CutPrefix(rest, []byte("s=")); !ok {
		return 0, ErrBadChallenge
	}
	if _, rest, ok = bytes.Cut(rest, []byte(",")); !ok {
		return 0, ErrBadChallenge
	}
	if rest, ok = bytes.CutPrefix(rest, []byte("i=")); !ok {
		return 0, ErrBadChallenge
	}
	n, err := strconv.Atoi(string(rest))
	if err != nil || n <= 0 {
		return 0, ErrBadChallenge
	}
	return n, nil
}
