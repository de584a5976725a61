package agent

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/agent/sessions"
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
