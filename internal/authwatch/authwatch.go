// Package authwatch reads a server's messages as a session opens, and refuses what would cost the client more than a bound.
//
// In SCRAM the client hashes the password as many times as the server's challenge says, and a
// role may set that count in its own password verifier; a server of a remote task's choosing may
// send anything. The watch also tells whether the server asked for a password before it accepted
// the session.
package authwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// DefaultMaxIterations is the most SCRAM iterations computed for a login when no bound is given:
// four times PostgreSQL's default scram_iterations (4096), a few milliseconds of one core.
const DefaultMaxIterations = 16384

// MaxIterationsLimit is the highest bound that may be given: pgx's own, which it enforces anyway.
const MaxIterationsLimit = 10_000_000

// The bounds of a connection whose string a role chose (RemoteLimits). A host list, and each
// host's addresses, are each an attempt, and sslmode=prefer tries each without TLS again.
const (
	MaxAttempts   = 16
	MaxLogins     = 4
	RemoteStartup = 64 << 10 // bytes before the session is ready, all attempts together
	MaxParameters = 256      // parameter names a server reports (pgx keeps each)
	MaxParameter  = 32 << 10 // bytes of one parameter report (libpq takes 30,000)
)

// OwnerStartup is the most bytes the servers of an owner's connection may send before its session
// is ready, all attempts together (PostgreSQL sends about 1 KB).
const OwnerStartup = 1 << 20

// Limits are what one watched connection may cost the client. A message that would pass a bound
// of bytes is refused at its header, before the client reads or allocates its body.
type Limits struct {
	// MaxIterations bounds the SCRAM iterations of each login; 0 means DefaultMaxIterations.
	MaxIterations int
	// MaxAttempts bounds the attempts of the connection: the addresses its hosts resolve to, past
	// which no more are given to pgx, and each attempt, past which one is refused at its first
	// read. MaxLogins bounds the SCRAM challenges the connection answers. 0 means no bound: an
	// owner's connection follows the DSN of pgjobs.conf, as many hosts as it names.
	MaxAttempts, MaxLogins int
	// MaxStartup bounds the bytes of the servers before the session is ready, all attempts
	// together; 0 means OwnerStartup.
	MaxStartup int
	// Session keeps the watch for the session's life: the parameters the server reports, which
	// pgx keeps all of, are bounded to MaxParameters names of MaxParameter bytes each; and the
	// bytes of the startup are counted until the session is connected (Reader.Connected), so
	// that they include the answers to ValidateConnect's queries, which pgx keeps too. With
	// MaxAttempts, a TCP server whose attempt broke off before its session was ready is not
	// dialled again by the connection, and a cancel request to one whose session was ready gets
	// cancelWait (a unix socket, a server of the agent's own host, is dialled as pgx asks).
	Session bool
}

// RemoteLimits returns the Limits of a connection whose string a role chose, with maxIterations.
func RemoteLimits(maxIterations int) Limits {
	return Limits{MaxIterations: maxIterations, MaxAttempts: MaxAttempts, MaxLogins: MaxLogins, MaxStartup: RemoteStartup, Session: true}
}

// maxChallenge is the longest SCRAM challenge (server-first-message) accepted, in bytes; a
// PostgreSQL server sends about 100.
const maxChallenge = 4096

// IterationsError refuses a login whose SCRAM challenge asks for more iterations than the bound.
type IterationsError struct {
	Iterations, Max int
}

func (e *IterationsError) Error() string {
	return fmt.Sprintf("the server asks for %d SCRAM iterations to log in (the count of the password verifier it holds), more than the %d the agent computes: the agent ended the login before computing it", e.Iterations, e.Max)
}

// ErrBadChallenge refuses a SCRAM challenge that is not r=NONCE,s=SALT,i=COUNT with a count of at
// least 1, or is longer than any server sends.
var ErrBadChallenge = fmt.Errorf("the server's SCRAM challenge is not r=NONCE,s=SALT,i=COUNT (a count of 1 or more, at most %d bytes in all): the agent ended the login", maxChallenge)

// ErrRefusedBefore refuses to connect again, within one connection, to a server whose attempt
// broke off before its session was ready (refused by the watch, or ended by the server: pgx would
// send it a cancel request, which carries no key yet and which the server could hold open), or
// whose session the watch refused once it was ready (a report over its bound).
var ErrRefusedBefore = errors.New("the agent does not connect again to a server whose attempt broke off before its session was ready, or that the agent refused")

// cancelWait bounds a connection to a server whose session was ready, within one connection: a
// cancel request, which a PostgreSQL server answers by closing at once.
const cancelWait = time.Second

// Bound names a bound of Limits.
type Bound int

const (
	BoundAttempts   Bound = iota // MaxAttempts
	BoundLogins                  // MaxLogins
	BoundStartup                 // MaxStartup
	BoundParameters              // MaxParameters
	BoundParameter               // MaxParameter
)

// BoundError refuses what goes past a bound of one connection.
type BoundError struct {
	Bound Bound
	Max   int
}

func (e *BoundError) Error() string {
	switch e.Bound {
	case BoundLogins:
		return fmt.Sprintf("the connection asked for more than %d SCRAM logins (one per server tried): the agent computed no more", e.Max)
	case BoundStartup:
		return fmt.Sprintf("the servers sent more than %d bytes before the session was ready and checked: the agent ended the connection", e.Max)
	case BoundParameters:
		return fmt.Sprintf("the server reported more than %d parameters (ParameterStatus): the agent ended the connection", e.Max)
	case BoundParameter:
		return fmt.Sprintf("the server reported a parameter (ParameterStatus) of more than %d bytes: the agent ended the connection", e.Max)
	}
	return fmt.Sprintf("the connection string leads to more than %d connection attempts (hosts, their addresses, and each again without TLS under sslmode=prefer or allow): the agent tried no more", e.Max)
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
	case errors.Is(err, ErrBadChallenge):
		return "08P01"
	case errors.As(err, &bound):
		if bound.Bound == BoundAttempts || bound.Bound == BoundLogins {
			return "08001"
		}
		return "08P01"
	}
	return ""
}

// Refused reports whether err is, or wraps, a refusal of the watch.
func Refused(err error) bool { return SQLState(err) != "" }

// bounds are the limits of one connection, shared by its attempts.
type bounds struct {
	Limits
	addresses, attempts, logins atomic.Int32
	startup                     atomic.Int64 // bytes before the session was ready, or connected

	mu      sync.Mutex
	states  map[string]attemptState // by the address of each TCP server attempted
	cancels map[string]bool         // the local addresses of the redials given cancelWait
}

// attemptState is where the latest attempt to a server stands.
type attemptState int

const (
	attempting attemptState = iota // not ready yet, or broken off: refused by the watch, or ended
	declined                       // the server refused the session (ErrorResponse)
	readied                        // the session was ready
)

// newBounds returns the bounds of a connection within limits, their defaults filled in.
func newBounds(limits Limits) *bounds {
	if limits.MaxIterations <= 0 {
		limits.MaxIterations = DefaultMaxIterations
	}
	if limits.MaxStartup <= 0 {
		limits.MaxStartup = OwnerStartup
	}
	return &bounds{Limits: limits}
}

// mark notes where the latest attempt to addr stands.
func (b *bounds) mark(addr string, s attemptState) {
	if addr == "" {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.states == nil {
		b.states = map[string]attemptState{}
	}
	b.states[addr] = s
}

// state returns where the latest attempt to addr stands, and whether there was one.
func (b *bounds) state(addr string) (attemptState, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.states[addr]
	return s, ok
}

// dial dials addr with dial, unless the latest attempt to it broke off; a server whose session was
// ready is given cancelWait (a cancel request).
func (b *bounds) dial(ctx context.Context, dial pgconn.DialFunc, network, addr string) (net.Conn, error) {
	s, seen := b.state(addr)
	switch {
	case !seen || s == declined:
		return dial(ctx, network, addr)
	case s == attempting:
		return nil, ErrRefusedBefore
	}
	conn, err := dial(ctx, network, addr)
	if err == nil {
		err = conn.SetDeadline(time.Now().Add(cancelWait))
	}
	if err == nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.cancels == nil {
			b.cancels = map[string]bool{}
		}
		b.cancels[conn.LocalAddr().String()] = true
	}
	return conn, err
}

// madeAttempt reports whether conn was dialled as a cancel request (given cancelWait), which pgx
// now makes an attempt.
func (b *bounds) madeAttempt(conn net.Conn) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	local := conn.LocalAddr().String()
	was := b.cancels[local]
	delete(b.cancels, local)
	return was
}

// Watch makes the client read each attempt of cfg's connection through a Reader within limits.
// It wraps what the frontend reads, not the network connection, which pgx keeps as it is (a TLS
// connection's certificate is what SCRAM-SHA-256-PLUS binds to, and the look at an idle session
// reads its socket); a refusal closes that connection at once. With limits.MaxAttempts, a server
// whose attempt broke off is not dialled again by this connection (pgx's cancel request after a
// failed read), and a cancel request to a server whose session was ready lasts cancelWait at
// most. A cfg
// watched is for one connection: connect again with a new one. Watch returns the Reader of the
// latest attempt, nil before any (ValidateConnect runs on the connecting goroutine).
func Watch(cfg *pgconn.Config, limits Limits) (latest func() *Reader) {
	b := newBounds(limits)
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
			left := b.MaxAttempts - int(b.addresses.Load())
			if left <= 0 {
				return nil, &BoundError{Bound: BoundAttempts, Max: limits.MaxAttempts}
			}
			addrs = addrs[:min(len(addrs), left)]
			b.addresses.Add(int32(len(addrs)))
			return addrs, nil
		}
	}
	if limits.MaxAttempts > 0 {
		dial := cfg.DialFunc
		if dial == nil {
			dial = (&net.Dialer{}).DialContext
		}
		cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return b.dial(ctx, dial, network, addr)
		}
	}
	var last atomic.Pointer[Reader]
	build := cfg.BuildFrontend
	if build == nil {
		build = pgproto3.NewFrontend
	}
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		conn, _ := w.(net.Conn) // pgx writes to the connection itself
		if conn != nil && limits.MaxAttempts > 0 && b.madeAttempt(conn) {
			conn.SetDeadline(time.Time{}) // an attempt, not a cancel request: no cancelWait
		}
		watched := newReader(r, conn, b)
		last.Store(watched)
		return build(watched, w)
	}
	return last.Load
}
