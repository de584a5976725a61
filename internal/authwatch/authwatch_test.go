package authwatch

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// msg returns a server message of type typ with body.
func msg(typ byte, body ...[]byte) []byte {
	var b []byte
	for _, part := range body {
		b = append(b, part...)
	}
	out := append([]byte{typ}, binary.BigEndian.AppendUint32(nil, uint32(len(b)+4))...)
	return append(out, b...)
}

// auth returns an AuthenticationRequest message of code with data.
func auth(code uint32, data string) []byte {
	return msg('R', binary.BigEndian.AppendUint32(nil, code), []byte(data))
}

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

var (
	sasl       = auth(authSASL, "SCRAM-SHA-256\x00\x00")
	challenge  = func(i string) []byte { return auth(authSASLContinue, "r=clientnonceservernonce,s=c2FsdA==,i="+i) }
	saslFinal  = auth(12, "v=c2lnbmF0dXJl")
	ok         = auth(authOK, "")
	ready      = cat(msg('S', []byte("server_version\x0016\x00")), msg('K', make([]byte, 8)), msg('Z', []byte("I")))
	negotiate  = msg('v', binary.BigEndian.AppendUint32(nil, 0), binary.BigEndian.AppendUint32(nil, 0))
	notice     = msg('N', []byte("SNOTICE\x00Mhello\x00\x00"))
	refusal    = msg('E', []byte("SFATAL\x00C28P01\x00Mpassword authentication failed\x00\x00"))
	longChallg = auth(authSASLContinue, "r="+strings.Repeat("n", maxChallenge)+",s=c2FsdA==,i=4096")
)

// errStartup is the refusal of an owner's startup past OwnerStartup.
var errStartup = &BoundError{Bound: BoundStartup, Max: OwnerStartup}

// challengeEnd returns where the stream's first SASL challenge ends.
func challengeEnd(stream []byte) int {
	for i := 0; i+9 <= len(stream); {
		end := int64(i) + 1 + int64(binary.BigEndian.Uint32(stream[i+1:]))
		if end > int64(len(stream)) {
			return len(stream)
		}
		if stream[i] == 'R' && binary.BigEndian.Uint32(stream[i+5:]) == authSASLContinue {
			return int(end)
		}
		i = int(end)
	}
	return len(stream)
}

// sizes returns the read sizes to try on a stream of n bytes: every size up to 64, and n.
func sizes(n int) []int {
	var s []int
	for size := 1; size <= min(n, 64); size++ {
		s = append(s, size)
	}
	return append(s, n)
}

// chunked is a reader whose reads give at most size bytes of data at a time.
type chunked struct {
	data []byte
	size int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.size)], c.data)
	c.data = c.data[n:]
	return n, nil
}

// readAll reads the server's stream through a Reader bounded to max iterations (the default when
// 0), size bytes at a time, and returns what the client got, the Reader and the error that ended
// the reading (nil at io.EOF).
func readAll(stream []byte, size, max int) ([]byte, *Reader, error) {
	if max == 0 {
		max = DefaultMaxIterations
	}
	return readThrough(newReader(&chunked{data: stream, size: size}, nil, newBounds(Limits{MaxIterations: max})))
}

// readThrough reads c to its end and returns what the client got, c and the error that ended the
// reading (nil at io.EOF).
func readThrough(c *Reader) ([]byte, *Reader, error) {
	var got []byte
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err == io.EOF {
			return got, c, nil
		}
		if err != nil {
			return got, c, err
		}
	}
}

func TestReader(t *testing.T) {
	for _, c := range []struct {
		name          string
		stream        []byte
		max           int
		passwordAsked bool
		refused       bool
		err           error // *IterationsError is matched by type, with iterations
		iterations    int
	}{
		{"trust", cat(ok, ready), 0, false, false, nil, 0},
		{"SCRAM at the bound", cat(sasl, challenge("16384"), saslFinal, ok, ready), 0, true, false, nil, 0},
		{"SCRAM at PostgreSQL's default", cat(sasl, challenge("4096"), saslFinal, ok, ready), 4096, true, false, nil, 0},
		{"SCRAM over the bound", cat(sasl, challenge("16385"), saslFinal, ok, ready), 0, true, true, &IterationsError{}, 16385},
		{"SCRAM over a bound given", cat(sasl, challenge("4097"), saslFinal, ok, ready), 4096, true, true, &IterationsError{}, 4097},
		{"pgx's own limit", cat(sasl, challenge("10000000")), 0, true, true, &IterationsError{}, 10000000},
		{"past pgx's", cat(sasl, challenge("10000001")), 0, true, true, &IterationsError{}, 10000001},
		{"after a protocol negotiation", cat(negotiate, sasl, challenge("20000")), 0, true, true, &IterationsError{}, 20000},
		{"after a notice", cat(notice, sasl, challenge("20000")), 0, true, true, &IterationsError{}, 20000},
		{"a challenge after AuthenticationOk", cat(ok, sasl, challenge("99999999"), ready), 0, false, true, &IterationsError{}, 99999999},
		{"a challenge after the session is ready is not looked at", cat(ok, ready, challenge("99999999")), 0, false, false, nil, 0},
		{"a refusal ends the watch", cat(refusal, challenge("99999999")), 0, false, false, nil, 0},
		{"MD5", cat(auth(authMD5, "salt"), ok, ready), 0, true, false, nil, 0},
		{"cleartext", cat(auth(authCleartext, ""), ok, ready), 0, true, false, nil, 0},
		{"no count", cat(sasl, auth(authSASLContinue, "r=n,s=c2FsdA==")), 0, true, true, ErrBadChallenge, 0},
		{"a count of 0", cat(sasl, challenge("0")), 0, true, true, ErrBadChallenge, 0},
		{"a negative count", cat(sasl, challenge("-5")), 0, true, true, ErrBadChallenge, 0},
		{"a count that is not a number", cat(sasl, challenge("4096x")), 0, true, true, ErrBadChallenge, 0},
		{"a count past int64", cat(sasl, challenge("99999999999999999999999")), 0, true, true, ErrBadChallenge, 0},
		{"a second count after the first", cat(sasl, challenge("4096,i=99999999")), 0, true, true, ErrBadChallenge, 0},
		{"the fields out of order", cat(sasl, auth(authSASLContinue, "s=c2FsdA==,r=n,i=4096")), 0, true, true, ErrBadChallenge, 0},
		{"a challenge longer than any server sends", cat(sasl, longChallg), 0, true, true, ErrBadChallenge, 0},
		{"a length shorter than a header", cat(sasl, []byte{'R', 0, 0, 0, 2}), 0, true, false, nil, 0},
		{"a flood of notices", cat(bytes.Repeat(notice, OwnerStartup/len(notice)+1), sasl), 0, false, true, errStartup, 0},
		{"notices up to the limit", cat(bytes.Repeat(notice, (OwnerStartup-len(sasl)-len(ok)-len(ready))/len(notice)), sasl, ok, ready), 0, true, false, nil, 0},
		{"a message declared of 1 GB", cat(sasl, []byte{'R', 0x40, 0, 0, 0}, auth(authSASLContinue, "")), 0, true, true, errStartup, 0},
		{"a message declared of 2 GB", cat(sasl, []byte{'R', 0x7f, 0xff, 0xff, 0xff}, auth(authSASLContinue, "")), 0, true, true, errStartup, 0},
		{"a length of 4 GB, past int32", cat(sasl, []byte{'R', 0xff, 0xff, 0xff, 0xff}, auth(authSASLContinue, "")), 0, true, true, errStartup, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, size := range sizes(len(c.stream)) {
				got, conn, err := readAll(c.stream, size, c.max)
				if conn.PasswordAsked() != c.passwordAsked {
					t.Fatalf("reads of %d bytes: password asked %v, want %v", size, conn.PasswordAsked(), c.passwordAsked)
				}
				if !c.refused {
					if err != nil || string(got) != string(c.stream) {
						t.Fatalf("reads of %d bytes: %v, %d of %d bytes passed; want all, no error", size, err, len(got), len(c.stream))
					}
					continue
				}
				var iterErr *IterationsError
				var bound *BoundError
				switch want := c.err.(type) {
				case *IterationsError:
					if !errors.As(err, &iterErr) || iterErr.Iterations != c.iterations {
						t.Fatalf("reads of %d bytes: %v, want the refusal of %d iterations", size, err, c.iterations)
					}
				case *BoundError:
					if !errors.As(err, &bound) || *bound != *want {
						t.Fatalf("reads of %d bytes: %v, want %v", size, err, want)
					}
				default:
					if !errors.Is(err, c.err) {
						t.Fatalf("reads of %d bytes: %v, want %v", size, err, c.err)
					}
				}
				// The client never gets the whole challenge: it cannot compute it.
				if end := challengeEnd(c.stream); len(got) >= end {
					t.Fatalf("reads of %d bytes: the client got %d bytes, the challenge ends at %d", size, len(got), end)
				}
				if _, err2 := conn.Read(make([]byte, 8)); err2 != err {
					t.Fatalf("a read after the refusal: %v, want %v again", err2, err)
				}
			}
		})
	}
}

func TestIterationsErrorSaysWhat(t *testing.T) {
	got := (&IterationsError{Iterations: 10000000, Max: 16384}).Error()
	for _, want := range []string{"10000000 SCRAM iterations", "16384", "password verifier", "before computing it"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q does not say %q", got, want)
		}
	}
}

// TestBoundsOfOneConnection: the attempts of one connection whose string a role chose (its hosts,
// their addresses, each again without TLS) share its bounds: at most MaxLogins SCRAM challenges are
// answered, and an attempt past MaxAttempts is refused at its first read. An owner's connection
// has neither bound.
func TestBoundsOfOneConnection(t *testing.T) {
	login := cat(sasl, challenge("4096"), saslFinal, ok, ready)
	trust := cat(ok, ready)
	for _, c := range []struct {
		name   string
		limits Limits
	}{{"a remote task's", RemoteLimits(0)}, {"an owner's", Limits{}}} {
		t.Run(c.name, func(t *testing.T) {
			b := newBounds(c.limits)
			var refused []string
			for i := 1; i <= MaxAttempts+1; i++ {
				stream := trust
				if i <= MaxLogins+1 {
					stream = login
				}
				_, _, err := readThrough(newReader(&chunked{data: stream, size: len(stream)}, nil, b))
				var bound *BoundError
				if errors.As(err, &bound) {
					refused = append(refused, fmt.Sprintf("%d: %+v", i, *bound))
				} else if err != nil {
					t.Fatalf("attempt %d: %v", i, err)
				}
			}
			want := []string{fmt.Sprintf("%d: {Bound:%d Max:%d}", MaxLogins+1, BoundLogins, MaxLogins), fmt.Sprintf("%d: {Bound:%d Max:%d}", MaxAttempts+1, BoundAttempts, MaxAttempts)}
			if c.limits.MaxAttempts == 0 {
				want = nil
			}
			if !slices.Equal(refused, want) {
				t.Fatalf("refused %v, want %v", refused, want)
			}
		})
	}
}

// TestAddressesOfOneConnection: the hosts of a remote task's string resolve to at most MaxAttempts
// addresses in all; past them no host is resolved, and no address dialled.
func TestAddressesOfOneConnection(t *testing.T) {
	cfg := &pgconn.Config{LookupFunc: func(_ context.Context, host string) ([]string, error) {
		return slices.Repeat([]string{"192.0.2.1"}, 10), nil
	}}
	Watch(cfg, RemoteLimits(0))
	var got []int
	for range 3 {
		addrs, err := cfg.LookupFunc(context.Background(), "many.example")
		var bound *BoundError
		if err != nil && (!errors.As(err, &bound) || bound.Max != MaxAttempts) {
			t.Fatalf("lookup: %v", err)
		}
		got = append(got, len(addrs))
	}
	if want := []int{10, MaxAttempts - 10, 0}; !slices.Equal(got, want) {
		t.Fatalf("addresses given %v, want %v", got, want)
	}
}

// TestWatchWrapsTheFrontend: Watch wraps what pgx's frontend reads, leaving the network connection
// to pgx (a wrapped TLS connection would hide the certificate SCRAM-SHA-256-PLUS binds to), and
// gives the Reader of the latest attempt.
func TestWatchWrapsTheFrontend(t *testing.T) {
	cfg := &pgconn.Config{}
	latest := Watch(cfg, Limits{MaxIterations: 4096})
	if cfg.AfterNetConnect != nil || latest() != nil {
		t.Fatal("Watch set AfterNetConnect, or has a Reader before any attempt")
	}
	stream := cat(sasl, challenge("4097"))
	f := cfg.BuildFrontend(&chunked{data: stream, size: 7}, io.Discard)
	if msg, err := f.Receive(); err != nil {
		t.Fatalf("the SASL request: %T, %v", msg, err)
	}
	var iterErr *IterationsError
	if _, err := f.Receive(); !errors.As(err, &iterErr) || *iterErr != (IterationsError{4097, 4096}) {
		t.Fatalf("the challenge of 4097: %v, want the refusal of 4097 over 4096", err)
	}
	if !latest().PasswordAsked() || !Refused(fmt.Errorf("connect: %w", iterErr)) {
		t.Fatal("the latest Reader did not see the password asked, or Refused does not know the refusal")
	}
}
