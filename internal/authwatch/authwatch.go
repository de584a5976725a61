// Package authwatch reads a server's messages as a session opens, and refuses what would cost the client more than a bound.
//
// In SCRAM the client hashes the password as many times as the server's challenge says, and a
// role may set that count in its own password verifier; a server of a remote task's choosing may
// send anything. The watch also tells whether the server asked for a password before it accepted
// the session.
package authwatch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// DefaultMaxIterations is the most SCRAM iterations computed for a login when no bound is given:
// four times PostgreSQL's default scram_iterations (4096), a few milliseconds of one core.
const DefaultMaxIterations = 16384

// MaxIterationsLimit is the highest bound that may be given: pgx's own, which it enforces anyway.
const MaxIterationsLimit = 10_000_000

// MaxAttempts and MaxLogins are the bounds of one connection whose string a role chose
// (RemoteLimits): a host list, and each host's addresses, are each an attempt, and sslmode=prefer
// tries each without TLS again.
const (
	MaxAttempts = 16
	MaxLogins   = 4
)

// MaxStartup is the most bytes a server may send an attempt before the session is ready for
// queries (PostgreSQL sends about 1 KB); a message that would go past it is refused at its header,
// before the client reads or allocates its body.
const MaxStartup = 1 << 20

// Limits are what one watched connection may cost the client.
type Limits struct {
	// MaxIterations bounds the SCRAM iterations of each login; 0 means DefaultMaxIterations.
	MaxIterations int
	// MaxAttempts bounds the attempts of the connection: the addresses its hosts resolve to, past
	// which no more are given to pgx, and each attempt, past which one is refused at its first
	// read. MaxLogins bounds the SCRAM challenges the connection answers. 0 means no bound: an
	// owner's connection follows the DSN of pgjobs.conf, as many hosts as it names.
	MaxAttempts, MaxLogins int
}

// RemoteLimits returns the Limits of a connection whose string a role chose: MaxAttempts and
// MaxLogins, and maxIterations.
func RemoteLimits(maxIterations int) Limits {
	return Limits{MaxIterations: maxIterations, MaxAttempts: MaxAttempts, MaxLogins: MaxLogins}
}

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
type IterationsError struct {
	Iterations, Max int
}

func (e *IterationsError) Error() string {
	return fmt.Sprintf("the server asks for %d SCRAM iterations to log in (the count of the password verifier it holds), more than the %d the agent computes: the agent ended the login before computing it", e.Iterations, e.Max)
}

// The other refusals of the watch.
var (
	// ErrBadChallenge refuses a SCRAM challenge that is not r=NONCE,s=SALT,i=COUNT with a count
	// of at least 1, or is longer than any server sends.
	ErrBadChallenge = fmt.Errorf("the server's SCRAM challenge is not r=NONCE,s=SALT,i=COUNT (a count of 1 or more, at most %d bytes in all): the agent ended the login", maxChallenge)
	// ErrStartupTooLong refuses a server that sends more than MaxStartup bytes before the session
	// is ready.
	ErrStartupTooLong = fmt.Errorf("the server sent more than %d bytes before the session was ready: the agent ended the connection", MaxStartup)
)

// BoundError refuses what goes past a bound of one connection: its attempts, or its SCRAM logins.
type BoundError struct {
	Logins bool // the SCRAM logins, else the attempts
	Max    int
}

func (e *BoundError) Error() string {
	if e.Logins {
		return fmt.Sprintf("the connection asked for more than %d SCRAM logins (one per server tried): the agent computed no more", e.Max)
	}
	return fmt.Sprintf("the connection string leads to more than %d connection attempts (hosts, their addresses, and each again without TLS under sslmode=prefer): the agent tried no more", e.Max)
}

// SQLState returns the SQLSTATE of a refusal of the watch that err is or wraps, "" for another
// error: 28000 (invalid_authorization_specification) for a count over the bound, 08P01
// (protocol_violation) for what no PostgreSQL server sends, and 08001 for a connection past its
// attempts or logins.
func SQLState(err error) string {
	var iterations *IterationsError
	var bound *BoundError
	switch {
	case errors.As(err, &iterations):
		return "28000"
	case errors.Is(err, ErrBadChallenge), errors.Is(err, ErrStartupTooLong):
		return "08P01"
	case errors.As(err, &bound):
		return "08001"
	}
	return ""
}

// Refused reports whether err is, or wraps, a refusal of the watch.
func Refused(err error) bool { return SQLState(err) != "" }

// bounds are the limits of one connection, shared by its attempts.
type bounds struct {
	Limits
	addresses, attempts, logins atomic.Int32
}

// Watch makes the client read each attempt of cfg's connection through a Reader within limits
// and MaxStartup. It wraps what the frontend reads, not the network connection, which pgx keeps as
// it is (a TLS connection's certificate is what SCRAM-SHA-256-PLUS binds to, and the look at an
// idle session reads its socket). A cfg watched is for one connection: connect again with a new
// one. Watch returns the Reader of the latest attempt, nil before any (ValidateConnect runs on
// the connecting goroutine, after its attempt's reads).
func Watch(cfg *pgconn.Config, limits Limits) (latest func() *Reader) {
	if limits.MaxIterations <= 0 {
		limits.MaxIterations = DefaultMaxIterations
	}
	b := &bounds{Limits: limits}
	if limits.MaxAttempts > 0 {
		lookup := cfg.LookupFunc
		if lookup == nil {
			lookup = net.DefaultResolver.LookupHost
		}
		cfg.LookupFunc = func(ctx context.Context, host string) ([]string, error) {
			addrs, err := lookup(ctx, host)
			if err != nil {
				return nil, err
			}
			left := limits.MaxAttempts - int(b.addresses.Load())
			if left <= 0 {
				return nil, &BoundError{Max: limits.MaxAttempts}
			}
			addrs = addrs[:min(len(addrs), left)]
			b.addresses.Add(int32(len(addrs)))
			return addrs, nil
		}
	}
	var last atomic.Pointer[Reader]
	build := cfg.BuildFrontend
	if build == nil {
		build = pgproto3.NewFrontend
	}
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		watched := newReader(r, b)
		last.Store(watched)
		return build(watched, w)
	}
	return last.Load
}

// Reader reads the server's messages of one attempt as they pass, until the session is ready for
// queries or refused. A SCRAM challenge over its bound, or past MaxLogins, ends the reading with an
// error before the client has all of it, so the client never computes it; that holds also for a
// challenge after AuthenticationOk, which pgx would answer too.
type Reader struct {
	r             io.Reader
	bounds        *bounds
	passwordAsked bool    // before the server accepted the session
	accepted      bool    // the server sent AuthenticationOk
	done          bool    // the startup ended: nothing more to look at
	err           error   // the refusal, returned by every later Read
	read          int     // bytes of the startup read
	header        [5]byte // the message being read: its type and length
	have          int     // bytes of header read
	size          int     // the body's length
	left          int     // bytes of the body still to pass
	body          []byte  // the body of an authentication message, its first maxChallenge+4 bytes
}

// newReader returns r watched within b: an attempt past MaxAttempts is refused at its first read.
func newReader(r io.Reader, b *bounds) *Reader {
	watched := &Reader{r: r, bounds: b}
	if b.MaxAttempts > 0 && int(b.attempts.Add(1)) > b.MaxAttempts {
		watched.err = &BoundError{Max: b.MaxAttempts}
	}
	return watched
}

// PasswordAsked reports whether the server asked for a password (cleartext, MD5 or SCRAM) before
// it accepted the session.
func (c *Reader) PasswordAsked() bool { return c.passwordAsked }

func (c *Reader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.r.Read(p)
	if c.done {
		return n, err
	}
	if c.err = c.watch(p[:n]); c.err != nil {
		return 0, c.err
	}
	return n, err
}

// watch reads b, the next bytes from the server, and returns the refusal of what they hold.
func (c *Reader) watch(b []byte) error {
	for len(b) > 0 && !c.done {
		if c.have < len(c.header) {
			k := copy(c.header[c.have:], b)
			c.have += k
			c.read += k
			b = b[k:]
			if c.have < len(c.header) {
				continue
			}
			length := binary.BigEndian.Uint32(c.header[1:]) // the body's and its own 4 bytes
			if length < 4 { // not a message: the protocol reader refuses it
				c.done = true
				return nil
			}
			if int64(length)-4 > int64(MaxStartup)-int64(c.read) {
				return ErrStartupTooLong
			}
			c.size = int(length) - 4
			c.left, c.body = c.size, c.body[:0]
		} else {
			take := min(c.left, len(b))
			if c.header[0] == 'R' {
				c.body = append(c.body, b[:min(take, maxChallenge+4-len(c.body))]...)
			}
			c.left -= take
			c.read += take
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
func (c *Reader) end() error {
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
			if n > c.bounds.MaxIterations {
				return &IterationsError{Iterations: n, Max: c.bounds.MaxIterations}
			}
			if c.bounds.MaxLogins > 0 && int(c.bounds.logins.Add(1)) > c.bounds.MaxLogins {
				return &BoundError{Logins: true, Max: c.bounds.MaxLogins}
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
