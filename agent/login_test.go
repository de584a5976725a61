package agent_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

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
