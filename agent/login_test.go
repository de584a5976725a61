package agent_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// TestOwnPasswordOfManyScramIterations: alice, an ordinary LOGIN role, sets her own password to a
// SCRAM verifier of 100,000 iterations (any count up to 10,000,000 would do; it need not match a
// password). In SCRAM the client hashes, so each session the agent opens as alice would cost the
// agent that many iterations before the login fails. The agent refuses the challenge unread: her
// run fails saying why and what to do, and bob's runs as before. Raising the agent's bound (a
// reload of scram_iterations) lets the agent try the login, which then fails on the password.
func TestOwnPasswordOfManyScramIterations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	bob := cluster.NewRole(t, "bob", db.name)
	for _, role := range []string{alice, bob} {
		if _, err := cluster.ConnectAs(t, db.name, role).Exec(ctx, fmt.Sprintf(`SELECT pgj_create_schedule('%[1]s', 'I 0:01'),
			pgj_create_job('%[1]s', 'note(''%[1]s'')', null, '%[1]s')`, role)); err != nil {
			t.Fatal(err)
		}
	}
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	setOwnVerifier(t, aliceConn, alice, 100000)
	clock := fakeclock.New(t0)
	master, _ := startAgent(t, clock, db)
	got := fireAt(t, db, clock, t0.Add(time.Minute), 2)
	if want := []string{alice + " error 10:01 28000", bob + " ok 10:01"}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
	var message, hint string
	if err := db.conn.QueryRow(ctx, "SELECT runmessage, runhint FROM pgjobs.pgj_run_ WHERE runjobname = $1", alice).Scan(&message, &hint); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(message, "asks for 100000 SCRAM iterations") || !strings.Contains(message, "ended the login before computing it") || !strings.Contains(hint, "scram_iterations in pgjobs.conf") {
		t.Fatalf("alice's run: message %q, hint %q; want the refusal of 100000 iterations and how to set it right", message, hint)
	}

	master.SetScramIterations(200000)
	got = fireAt(t, db, clock, t0.Add(2*time.Minute), 4)
	if err := db.conn.QueryRow(ctx, "SELECT runmessage FROM pgjobs.pgj_run_ WHERE runjobname = $1 ORDER BY runid DESC LIMIT 1", alice).Scan(&message); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(message, "password authentication failed") {
		t.Fatalf("runs %v; alice's run under a bound of 200000: %q, want the login tried and failed on the password", got, message)
	}
}

// setOwnVerifier makes the cluster ask role for its password, and role, on its session conn opened
// before, set its own password to a SCRAM verifier of iterations that matches no password.
func setOwnVerifier(t *testing.T, conn interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, role string, iterations int) {
	t.Helper()
	cluster.RequirePassword(t, role, "not the agent's")
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	if _, err := conn.Exec(context.Background(), fmt.Sprintf("ALTER ROLE %s PASSWORD 'SCRAM-SHA-256$%d:c2FsdHNhbHRzYWx0c2FsdA==$%s:%s'", role, iterations, key, key)); err != nil {
		t.Fatalf("%s sets its own verifier: %v", role, err)
	}
}

// TestTaskOwnerOfManyScramIterations: the same for alice's task: the agent does not try the login,
// and the task fails saying why.
func TestTaskOwnerOfManyScramIterations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newTaskDB(t, nil)
	conn, err := d.as.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	setOwnVerifier(t, conn, d.role, 100000)
	var id int64
	if err := conn.QueryRow(ctx, "INSERT INTO task (input) VALUES ('SELECT 1') RETURNING id").Scan(&id); err != nil {
		t.Fatal(err)
	}
	if r := d.waitTask(t, id, 20*time.Second, "DONE", "FAIL"); r.State != "FAIL" || !strings.Contains(fmt.Sprint(deref(r.Error)), "asks for 100000 SCRAM iterations") {
		t.Fatalf("state %s, error %v; want FAIL, the refusal of 100000 iterations", r.State, deref(r.Error))
	}
}

// TestOwnerSessionEndedByItsRoleIsReplaced: alice ends her own idle session of the agent between
// two runs; the agent finds it out before it lends it and opens another, so her next run runs. A
// watch wrapped around the network connection (the first version of the SCRAM bound) hid the
// socket from that look, and the run failed on a broken pipe (the README-only attack on the bound).
func TestOwnerSessionEndedByItsRoleIsReplaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	if _, err := aliceConn.Exec(ctx, `SELECT pgj_create_schedule('Each', 'I 0:01'), pgj_create_job('Mine', 'note(''Mine'')', null, 'Each')`); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	fireAt(t, db, clock, t0.Add(time.Minute), 1)
	rows, _ := aliceConn.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE usename = current_user AND pid <> pg_backend_pid() AND application_name LIKE 'pgjobsagent % job'`)
	ended, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil || len(ended) != 1 {
		t.Fatalf("alice's agent sessions: %v (%v), want 1", ended, err)
	}
	if _, err := aliceConn.Exec(ctx, "SELECT pg_terminate_backend($1)", ended[0]); err != nil {
		t.Fatal(err)
	}
	if !eventually(t, 10*time.Second, "the backend gone", func() bool {
		var n int
		return aliceConn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", ended[0]).Scan(&n) == nil && n == 0
	}) {
		t.Fatal("alice's agent session did not end")
	}
	if got := fireAt(t, db, clock, t0.Add(2*time.Minute), 2); strings.Join(got, ";") != "Mine ok 10:01;Mine ok 10:02" {
		t.Fatalf("runs = %v", got)
	}
}
