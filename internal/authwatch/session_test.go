package authwatch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
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

// tcpConn is a net.Conn of a TCP address that records its closing.
type tcpConn struct {
	net.Conn
	addr   *net.TCPAddr
	closed bool
}

func (c *tcpConn) RemoteAddr() net.Addr { return c.addr }
func (c *tcpConn) Close() error         { c.closed = true; return nil }

// TestRefusalClosesAndIsNotDialledAgain: a refusal closes the connection at once, and the server
// is not dialled again by the same connection, so pgx's cancel request after the failed read
// holds nothing open on it (the second README-only attack: 16 such requests per task, each open
// up to 15 s, exhausted the agent's file descriptors); another server still is.
func TestRefusalClosesAndIsNotDialledAgain(t *testing.T) {
	dialled := []string{}
	cfg := &pgconn.Config{DialFunc: func(_ context.Context, _, addr string) (net.Conn, error) {
		dialled = append(dialled, addr)
		return nil, errors.New("not really")
	}}
	Watch(cfg, RemoteLimits(0))
	conn := &tcpConn{addr: &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 5432}}
	f := cfg.BuildFrontend(&chunked{data: cat(sasl, challenge("99999")), size: 100}, conn)
	_, _ = f.Receive()
	if _, err := f.Receive(); !Refused(err) || !conn.closed {
		t.Fatalf("the challenge: %v, closed %v; want refused and closed", err, conn.closed)
	}
	if _, err := cfg.DialFunc(context.Background(), "tcp", "192.0.2.1:5432"); !errors.Is(err, ErrRefusedBefore) {
		t.Fatalf("dialling the refused server again: %v, want %v", err, ErrRefusedBefore)
	}
	_, _ = cfg.DialFunc(context.Background(), "tcp", "192.0.2.2:5432")
	if len(dialled) != 1 || dialled[0] != "192.0.2.2:5432" {
		t.Fatalf("dialled %v, want only the other server", dialled)
	}
}
