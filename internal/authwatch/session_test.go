package authwatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// parameter returns a ParameterStatus message of name and value.
func parameter(name, value string) []byte { return msg('S', []byte(name+"\x00"+value+"\x00")) }

// TestSessionParameters: a remote server's reports of parameters, which pgx keeps all of, are
// bounded for the session's life (the second README-only attack: a server answering a query with
// endless new parameters took the agent to 8.7 GB); an owner's session is not watched past its
// start.
func TestSessionParameters(t *testing.T) {
	var many, repeated []byte
	for i := range MaxParameters + 1 {
		many = append(many, parameter(fmt.Sprintf("p%d", i), "v")...)
		repeated = append(repeated, parameter("p", "v")...)
	}
	long := parameter("p", strings.Repeat("v", MaxParameter))
	for _, c := range []struct {
		name    string
		stream  []byte
		limits  Limits
		refused *BoundError
	}{
		{"new names past the bound", cat(ok, ready, many), RemoteLimits(0), &BoundError{Bound: BoundParameters, Max: MaxParameters}},
		{"new names during the startup", cat(ok, many, ready), RemoteLimits(0), &BoundError{Bound: BoundParameters, Max: MaxParameters}},
		{"the same name again", cat(ok, ready, repeated, repeated), RemoteLimits(0), nil},
		{"one too long", cat(ok, ready, long), RemoteLimits(0), &BoundError{Bound: BoundParameter, Max: MaxParameter}},
		{"an owner's session", cat(ok, ready, many, long), Limits{}, nil},
		{"after a query's error", cat(ok, ready, refusal, many), RemoteLimits(0), &BoundError{Bound: BoundParameters, Max: MaxParameters}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, size := range []int{1, 7, 4096, len(c.stream)} {
				got, _, err := readThrough(newReader(&chunked{data: c.stream, size: size}, nil, newBounds(c.limits)))
				var bound *BoundError
				switch {
				case c.refused == nil && (err != nil || len(got) != len(c.stream)):
					t.Fatalf("reads of %d: %v, %d of %d bytes; want all", size, err, len(got), len(c.stream))
				case c.refused != nil && (!errors.As(err, &bound) || *bound != *c.refused):
					t.Fatalf("reads of %d: %v, want %v", size, err, c.refused)
				}
			}
		})
	}
}

// TestStartupOfAllAttempts: a remote connection's servers send at most RemoteStartup bytes before
// its session is ready, all attempts together (the second README-only attack: 1 MiB on each of 16
// hosts, dribbled, cost 9 s of CPU).
func TestStartupOfAllAttempts(t *testing.T) {
	b := newBounds(RemoteLimits(0))
	notices := cat(notice, notice, notice, notice, notice, notice, notice, notice)
	half := cat(sasl)
	for len(half) < RemoteStartup/2-len(notices) {
		half = append(half, notices...)
	}
	if _, _, err := readThrough(newReader(&chunked{data: half, size: 64}, nil, b)); err != nil {
		t.Fatalf("the first attempt, half the bound: %v", err)
	}
	var bound *BoundError
	if _, _, err := readThrough(newReader(&chunked{data: cat(half, half), size: 64}, nil, b)); !errors.As(err, &bound) || bound.Bound != BoundStartup {
		t.Fatalf("the second attempt, the other half and more: %v, want the refusal of the startup", err)
	}
}

// tcpConn is a net.Conn of a TCP address that records its closing and its deadline.
type tcpConn struct {
	net.Conn
	addr     *net.TCPAddr
	closed   bool
	deadline time.Time
}

func (c *tcpConn) LocalAddr() net.Addr           { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000} }
func (c *tcpConn) RemoteAddr() net.Addr          { return c.addr }
func (c *tcpConn) Close() error                  { c.closed = true; return nil }
func (c *tcpConn) SetDeadline(t time.Time) error { c.deadline = t; return nil }

// TestRedialOfOneConnection: a refusal closes the connection at once; a server whose attempt broke
// off before its session was ready (refused, or ended by the server) is not dialled again by the
// same connection, so pgx's cancel request after the failed read holds nothing open on it (the
// second README-only attack: 16 such requests per task, each open up to 15 s, exhausted the
// agent's file descriptors). A server that refused the session itself is tried again (the next
// attempt), and one whose session was ready is dialled for at most cancelWait (a cancel request),
// unless the watch refused it after it was ready (a report over its bound): pgx's cancel request
// would otherwise hold the agent to it once more (the fifth code review).
func TestRedialOfOneConnection(t *testing.T) {
	for _, c := range []struct {
		name     string
		stream   []byte
		refused  bool  // by the watch
		redial   error // nil: dialled
		deadline bool  // the redial's
	}{
		{"refused by the watch", cat(sasl, challenge("99999")), true, ErrRefusedBefore, false},
		{"ended by the server", cat(sasl), false, ErrRefusedBefore, false},
		{"declined by the server", cat(refusal), false, nil, false},
		{"ready", cat(ok, ready), false, nil, true},
		{"refused after ready", cat(ok, ready, parameter("p", strings.Repeat("x", MaxParameter))), true, ErrRefusedBefore, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var dialled []*tcpConn
			cfg := &pgconn.Config{DialFunc: func(_ context.Context, _, addr string) (net.Conn, error) {
				conn := &tcpConn{}
				dialled = append(dialled, conn)
				return conn, nil
			}}
			Watch(cfg, RemoteLimits(0))
			conn := &tcpConn{addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5432}}
			f := cfg.BuildFrontend(&chunked{data: c.stream, size: 100}, conn)
			var err error
			for err == nil {
				_, err = f.Receive()
			}
			if Refused(err) != c.refused || conn.closed != c.refused {
				t.Fatalf("the attempt: %v, closed %v; want refused and closed %v", err, conn.closed, c.refused)
			}
			redial, err := cfg.DialFunc(context.Background(), "tcp", "192.0.2.1:5432")
			if !errors.Is(err, c.redial) || (err == nil) != (len(dialled) == 1) {
				t.Fatalf("dialling the server again: %v, %d dialled; want %v", err, len(dialled), c.redial)
			}
			if err == nil && redial.(*tcpConn).deadline.IsZero() == c.deadline {
				t.Fatalf("the redial's deadline %v, want one %v", redial.(*tcpConn).deadline, c.deadline)
			}
			if _, err := cfg.DialFunc(context.Background(), "tcp", "192.0.2.2:5432"); err != nil || dialled[len(dialled)-1].deadline != (time.Time{}) {
				t.Fatalf("dialling another server: %v", err)
			}
		})
	}
}

// TestRedialThatIsAnAttempt: a redial that pgx makes an attempt, not a cancel request, is not
// bounded to cancelWait (prefer-standby connects again to the server whose session it found not
// preferred); an attempt whose TLS handshake failed before any read is tried again without TLS;
// an owner's connection dials as pgx asks (the fourth code review).
func TestRedialThatIsAnAttempt(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5432}
	newCfg := func(limits Limits) *pgconn.Config {
		cfg := &pgconn.Config{DialFunc: func(context.Context, string, string) (net.Conn, error) {
			return &tcpConn{addr: addr}, nil
		}}
		Watch(cfg, limits)
		return cfg
	}
	receiveAll := func(f interface {
		Receive() (pgproto3.BackendMessage, error)
	}) {
		for _, err := f.Receive(); err == nil; _, err = f.Receive() {
		}
	}

	cfg := newCfg(RemoteLimits(0))
	receiveAll(cfg.BuildFrontend(&chunked{data: cat(ok, ready), size: 100}, &tcpConn{addr: addr}))
	again, err := cfg.DialFunc(context.Background(), "tcp", addr.String())
	if err != nil || again.(*tcpConn).deadline.IsZero() {
		t.Fatalf("the redial of a server whose session was ready: %v, deadline %v; want cancelWait", err, again.(*tcpConn).deadline)
	}
	cfg.BuildFrontend(&chunked{}, again)
	if !again.(*tcpConn).deadline.IsZero() {
		t.Fatal("the redial made an attempt kept its deadline of a cancel request")
	}

	cfg = newCfg(RemoteLimits(0))
	cfg.BuildFrontend(&chunked{}, &tcpConn{addr: addr}) // its TLS handshake failed: never read
	if _, err := cfg.DialFunc(context.Background(), "tcp", addr.String()); err != nil {
		t.Fatalf("the attempt without TLS after a failed handshake: %v", err)
	}

	cfg = newCfg(Limits{})
	receiveAll(cfg.BuildFrontend(&chunked{data: sasl, size: 100}, &tcpConn{addr: addr}))
	if conn, err := cfg.DialFunc(context.Background(), "tcp", addr.String()); err != nil || !conn.(*tcpConn).deadline.IsZero() {
		t.Fatalf("an owner's redial after a broken attempt: %v; want dialled as pgx asks", err)
	}
}
