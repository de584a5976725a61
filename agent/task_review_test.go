package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent"
)

// The cases found by the code review and the attacker review of the task service (issue 12):
// each failed on the code before its fix.

// TestTaskLoneUtilityStatement: the guard runs as a query of its own, so a lone VACUUM runs outside
// a transaction block, as in psql.
func TestTaskLoneUtilityStatement(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	d.exec(t, "CREATE TABLE v (n int); ALTER TABLE v OWNER TO "+d.role)
	id := d.insert(t, "input, delete", "VACUUM v", false)
	if r := d.waitTask(t, id, 20*time.Second, "DONE", "FAIL"); r.State != "DONE" {
		t.Fatalf("VACUUM: %s, error %q", r.State, deref(r.Error))
	}
}

// TestTaskUnstorableOutput: a binary COPY (not UTF-8, with NUL bytes) is stored as text the
// database takes, and holds up no other task's result.
func TestTaskUnstorableOutput(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	bad := d.insert(t, "input", "COPY (SELECT 1) TO STDOUT (FORMAT binary)")
	bob := cluster.NewRole(t, "bob", d.name)
	var good int64
	if err := newPool(t, d.name, bob).QueryRow(context.Background(), "INSERT INTO task (input) VALUES ('SELECT 1') RETURNING id").Scan(&good); err != nil {
		t.Fatal(err)
	}
	d.waitTask(t, good, 20*time.Second, "DONE")
	if r := d.waitTask(t, bad, 20*time.Second, "DONE", "FAIL"); r.State != "DONE" || !strings.HasPrefix(deref(r.Output).(string), `PGCOPY`) {
		t.Fatalf("binary COPY: %s, output %q, error %q", r.State, deref(r.Output), deref(r.Error))
	}
}

// TestTaskOfADroppedOwnerFails: a task whose owner was dropped fails saying so; the claim that took
// it is not lost, and another task of the same claim runs.
func TestTaskOfADroppedOwnerFails(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	bob := cluster.NewRole(t, "bob", d.name)
	asBob := newPool(t, d.name, bob)
	var bad int64
	if err := asBob.QueryRow(context.Background(), "INSERT INTO task (input, plan) VALUES ('SELECT 1', now() + interval '1 second') RETURNING id").Scan(&bad); err != nil {
		t.Fatal(err)
	}
	asBob.Close()
	d.exec(t, "DROP ROLE "+bob)
	good := d.insert(t, "input, plan, delete", "SELECT 2", time.Now().Add(time.Second), false)
	d.waitTask(t, good, 20*time.Second, "DONE")
	if r := d.waitTask(t, bad, 20*time.Second, "DONE", "FAIL"); r.State != "FAIL" || !strings.Contains(deref(r.Error).(string), "was dropped") {
		t.Fatalf("the dropped owner's task: %s, error %q", r.State, deref(r.Error))
	}
}

// TestTaskTimeoutDoesNotOutliveItsTask: a kept session (save) does not hand the statement_timeout
// of its task to the next one.
func TestTaskTimeoutDoesNotOutliveItsTask(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	a := d.insert(t, "input, timeout, save", "SELECT 1", "150 ms", true)
	d.waitTask(t, a, 20*time.Second, "DONE", "FAIL")
	b := d.insert(t, "input", "SHOW statement_timeout")
	if r := d.waitTask(t, b, 20*time.Second, "DONE", "FAIL"); deref(r.Output) != "0" {
		t.Fatalf("a task without timeout runs with statement_timeout %q", deref(r.Output))
	}
}

// TestRetryKeepsTheRepeatGrid: a retry moves the plan of its row, not the grid of the next rows.
func TestRetryKeepsTheRepeatGrid(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	d.exec(t, "CREATE SEQUENCE s; GRANT ALL ON s TO PUBLIC")
	plan := time.Now().Truncate(time.Second).Add(time.Second)
	id := d.insert(t, "input, plan, repeat, retries, retry_delay, delete", "SELECT CASE WHEN nextval('s') = 1 THEN 1/0 ELSE 1 END", plan, "20 seconds", 1, "500 ms", false)
	if r := d.waitTask(t, id, 20*time.Second, "DONE", "FAIL"); r.Attempt != 2 {
		t.Fatalf("attempt %d, want a retry", r.Attempt)
	}
	var next time.Time
	if err := d.su.QueryRow(context.Background(), "SELECT plan FROM pgjobs.task WHERE parent = $1", id).Scan(&next); err != nil {
		t.Fatal(err)
	}
	if want := plan.Add(20 * time.Second); !next.Equal(want) {
		t.Fatalf("next plan %s, want %s (the first plan + repeat)", next.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
	}
}

// TestTaskCancelledByTheStopRunsAgain: a run cancelled when the agent's stop grace ends is left to
// the next agent (WORK, to be reset), not ended FAIL.
func TestTaskCancelledByTheStopRunsAgain(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	_ = d
	db := newTestDB(t)
	role := cluster.NewRole(t, "alice", db.name)
	written := &endedTasks{changed: make(chan struct{})}
	m, _ := startAgentWith(t, agent.RealClock{}, func(o *agent.Options) { o.Start = time.Time{}; o.OnTasksWritten = written.report }, db)
	td := taskDB{testDB: db, role: role, as: newPool(t, db.name, role), su: newPool(t, db.name, ""), ended: written}
	id := td.insert(t, "input", "SELECT pg_sleep(30)")
	td.waitTask(t, id, 20*time.Second, "WORK")
	m.Stop(200 * time.Millisecond)
	if r, _ := td.row(t, id); r.State != "WORK" || r.Attempt != 1 {
		t.Fatalf("after the stop: %s, attempt %d, error %q; want WORK for the next agent", r.State, r.Attempt, deref(r.Error))
	}
}

// TestLockedReadyRowTakesNoSlot: a ready row its owner holds locked takes no place in the claim:
// another role's task starts in the free slot.
func TestLockedReadyRowTakesNoSlot(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, func(o *agent.Options) { o.TaskRuns = 3 })
	ctx := context.Background()
	a1 := d.insert(t, "\"group\", max, input", "g", 5, "SELECT pg_sleep(3)")
	d.waitTask(t, a1, 20*time.Second, "WORK")
	bob := cluster.NewRole(t, "bob", d.name)
	asBob := newPool(t, d.name, bob)
	tx, err := asBob.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var b int64
	if err := tx.QueryRow(ctx, "INSERT INTO task (input) VALUES ('SELECT 1') RETURNING id").Scan(&b); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// bob's row is locked before the agent claims it: a second transaction holds it.
	lock, err := asBob.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback(ctx)
	if _, err := lock.Exec(ctx, "SELECT FROM task WHERE id = $1 FOR UPDATE", b); err != nil {
		t.Fatal(err)
	}
	carol := cluster.NewRole(t, "carol", d.name)
	var c int64
	if err := newPool(t, d.name, carol).QueryRow(ctx, "INSERT INTO task (input, delete) VALUES ('SELECT 1', false) RETURNING id").Scan(&c); err != nil {
		t.Fatal(err)
	}
	rc := d.waitTask(t, c, 20*time.Second, "DONE")
	ra := d.waitTask(t, a1, 20*time.Second, "DONE")
	if !rc.Start.Before(*ra.Stop) {
		t.Fatalf("carol's task started at %s, after alice's run ended (%s): a slot stayed empty", rc.Start, ra.Stop)
	}
}
