package agent

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/authwatch"
)

// An owner session keeps none of the notifications its runs receive (the attacker review: a run
// that notifies itself would otherwise pile them up in the agent's memory for the session's life),
// and no prepared statement of pgx's cache, which the reset between runs deallocates.
func TestOwnerSessionsKeepNoNotificationsNorCachedStatements(t *testing.T) {
	a := &dbAgent{db: Database{ID: 7, DSN: "host=/tmp dbname=sales"}}
	cfg, err := a.ownerConnConfig("alice")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "alice" {
		t.Errorf("user %q, want alice", cfg.User)
	}
	if cfg.OnNotification == nil {
		t.Error("OnNotification is nil: pgx keeps every notification a run receives until the session closes")
	}
	if cfg.DefaultQueryExecMode != pgx.QueryExecModeExec {
		t.Errorf("DefaultQueryExecMode %v, want QueryExecModeExec: the reset deallocates pgx's cached statements", cfg.DefaultQueryExecMode)
	}
}

// The session that ends a backend of a run given up connects as its owner with sessions.EndParams,
// which win over the owner's own defaults.
func TestSessionToEndConnectsWithEndParams(t *testing.T) {
	a := &dbAgent{db: Database{ID: 7, DSN: "host=/tmp dbname=sales"}}
	cfg, err := a.endConnConfig("alice")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.User != "alice" {
		t.Errorf("user %q, want alice", cfg.User)
	}
	for k, v := range sessions.EndParams {
		if got := cfg.RuntimeParams[k]; got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

// Every session the agent opens as an owner, for its runs and to end a backend of its own, is
// watched: the SCRAM iterations of the owner's verifier are bounded by the master's setting, read
// when the session opens (the README-only attack of 2026-11-27: a verifier of 10,000,000 iterations
// cost the agent seconds of CPU per session). The network connection is pgx's own: TLS channel
// binding still sees the server's certificate.
func TestOwnerSessionsBoundScramIterations(t *testing.T) {
	t.Parallel()
	bound := new(atomic.Int64)
	a := &dbAgent{db: Database{ID: 7, DSN: "host=/tmp dbname=sales"}, scramIterations: bound}
	for _, n := range []int64{0, 600000} {
		bound.Store(n)
		want := int(n)
		if n == 0 {
			want = authwatch.DefaultMaxIterations
		}
		for name, config := range map[string]func(string) (*pgx.ConnConfig, error){"run": a.ownerConnConfig, "end": a.endConnConfig} {
			cfg, err := config("alice")
			if err != nil {
				t.Fatal(err)
			}
			if cfg.AfterNetConnect != nil {
				t.Errorf("the %s session wraps the network connection", name)
			}
			f := cfg.BuildFrontend(bytes.NewReader(scramChallenge(want+1)), io.Discard)
			_, err = f.Receive() // the SASL request
			if err == nil {
				_, err = f.Receive()
			}
			var iterations *authwatch.IterationsError
			if !errors.As(err, &iterations) || *iterations != (authwatch.IterationsError{Iterations: want + 1, Max: want}) {
				t.Errorf("the %s session at setting %d, a challenge of %d: %v; want it refused over %d", name, n, want+1, err, want)
			}
		}
	}
}

// scramChallenge returns a server's SASL request and its challenge of iterations.
func scramChallenge(iterations int) []byte {
	auth := func(code uint32, data string) []byte {
		body := append(binary.BigEndian.AppendUint32(nil, code), data...)
		return append(binary.BigEndian.AppendUint32([]byte{'R'}, uint32(len(body)+4)), body...)
	}
	return append(auth(10, "SCRAM-SHA-256\x00\x00"), auth(11, fmt.Sprintf("r=nonce,s=c2FsdA==,i=%d", iterations))...)
}

// A statement that waited past lock_timeout, or that the server ended to break a deadlock, restarts
// the services keeping the lead; other errors end the term.
func TestLockTimedOut(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&pgconn.PgError{Code: "55P03"}, true},
		{fmt.Errorf("record planned runs: %w", &pgconn.PgError{Code: "40P01"}), true},
		{&pgconn.PgError{Code: "57014"}, false},
		{errors.New("connection reset"), false},
		{nil, false},
	} {
		if got := lockTimedOut(tc.err); got != tc.want {
			t.Errorf("lockTimedOut(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
