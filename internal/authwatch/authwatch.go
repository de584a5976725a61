// Package authwatch reads a server's messages as a session opens, and refuses a SCRAM challenge over a bound.
//
// It also tells whether the server asked for a password before it accepted the session.
package authwatch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultMaxIterations is the most SCRAM iterations computed for a login when no bound is given:
// four times PostgreSQL's default scram_iterations (4096), a few milliseconds of one core.
const DefaultMaxIterations = 16384

// MaxIterationsLimit is the highest bound that may be given: pgx's own, which it enforces anyway.
const MaxIterationsLimit = 10_000_000

// maxChallenge is the longest SCRAM challenge (server-first-message) accepted, in bytes; a
// PostgreSQL server sends about 100.
const maxChallenge = 4096

// The authentication request codes of an AuthenticationRequest ('R') message.
const (
	authOK           = 0
	authCleartext    = 3
	authMD5          = 5
	authSASL         = 10
	authSASLContinue = 11
)

// IterationsError refuses a login whose SCRAM challenge asks for more iterations than the bound.
// In SCRAM the client hashes the password that many times, and the count is the one of the role's
// password verifier, which the role itself may set.
type IterationsError struct {
	Iterations, Max int
}

func (e *IterationsError) Error() string {
	return fmt.Sprintf("the server asks for %d SCRAM iterations to log in (the count of the role's password verifier), more than the %d the agent computes: the login was not attempted", e.Iterations, e.Max)
}

// ErrBadChallenge refuses a SCRAM challenge that cannot be read as r=NONCE,s=SALT,i=COUNT, or is
// longer than any server sends.
var ErrBadChallenge = fmt.Errorf("the server's SCRAM challenge is not r=NONCE,s=SALT,i=COUNT of at most %d bytes: the login was not attempted", maxChallenge)

// Refused reports whether err is, or wraps, a refusal of the watch: an *IterationsError or
// ErrBadChallenge.
func Refused(err error) bool {
	var iterations *IterationsError
	return errors.As(err, &iterations) || errors.Is(err, ErrBadChallenge)
}

// Conn is a net.Conn that reads the server's messages as they pass, until the session is ready
// for queries or refused. A SCRAM challenge over its bound ends the reading with an error before
// the client sees it, so the client never computes it; that holds also for a challenge after
// AuthenticationOk, which pgx would answer too (a server of a remote task's choosing may send one).
type Conn struct {
	net.Conn
	maxIterations int
	passwordAsked bool    // before the server accepted the session
	accepted      bool    // the server sent AuthenticationOk
	done          bool    // the startup ended: nothing more to look at
	err           error   // the refusal, returned by every later Read
	header        [5]byte // the message being read: its type and length
	have          int     // bytes of header read
	size          int     // the body's length
	left          int     // bytes of the body still to pass
	body          []byte  // the body of an authentication message, its first maxChallenge+4 bytes
}

// NewConn returns conn watched, with a bound of maxIterations SCRAM iterations
// (DefaultMaxIterations when 0 or less).
func NewConn(conn net.Conn, maxIterations int) *Conn {
	if maxIterations <= 0 {
		maxIterations = DefaultMaxIterations
	}
	return &Conn{Conn: conn, maxIterations: maxIterations}
}

// Watch makes each connection attempt of cfg watched by a Conn bounded to maxIterations (see
// NewConn), after cfg's own AfterNetConnect if it has one. It returns the Conn of the latest
// attempt, nil before any: with a cfg that connects once at a time, the Conn of the attempt that
// is validating (ValidateConnect runs on the connecting goroutine).
func Watch(cfg *pgconn.Config, maxIterations int) (latest func() *Conn) {
	var last atomic.Pointer[Conn]
	before := cfg.AfterNetConnect
	cfg.AfterNetConnect = func(ctx context.Context, c *pgconn.Config, conn net.Conn) (net.Conn, error) {
		if before != nil {
			var err error
			if conn, err = before(ctx, c, conn); err != nil {
				return nil, err
			}
		}
		watched := NewConn(conn, maxIterations)
		last.Store(watched)
		return watched, nil
	}
	return last.Load
}

// MaxIterations returns the most SCRAM iterations c lets the client compute.
func (c *Conn) MaxIterations() int { return c.maxIterations }

// PasswordAsked reports whether the server asked for a password (cleartext, MD5 or SCRAM) before
// it accepted the session.
func (c *Conn) PasswordAsked() bool { return c.passwordAsked }

func (c *Conn) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.Conn.Read(p)
	if c.done {
		return n, err
	}
	if c.err = c.watch(p[:n]); c.err != nil {
		return 0, c.err
	}
	return n, err
}

// watch reads b, the next bytes from the server, and returns the refusal of a challenge in them.
func (c *Conn) watch(b []byte) error {
	for len(b) > 0 && !c.done {
		if c.have < len(c.header) {
			k := copy(c.header[c.have:], b)
			c.have += k
			b = b[k:]
			if c.have < len(c.header) {
				continue
			}
			c.size = int(binary.BigEndian.Uint32(c.header[1:])) - 4
			c.left, c.body = c.size, c.body[:0]
			if c.size < 0 { // not a message: the protocol reader refuses it
				c.done = true
				return nil
			}
		} else {
			take := min(c.left, len(b))
			if c.header[0] == 'R' {
				c.body = append(c.body, b[:min(take, maxChallenge+4-len(c.body))]...)
			}
			c.left -= take
			b = b[take:]
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

// end looks at the message whose last byte was just read.
func (c *Conn) end() error {
	switch c.header[0] {
	case 'E', 'Z': // the server refused the session, or it is ready for queries
		c.done = true
	case 'R':
		if len(c.body) < 4 {
			return nil // not an authentication request: the protocol reader refuses it
		}
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
			if n > c.maxIterations {
				return &IterationsError{Iterations: n, Max: c.maxIterations}
			}
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
