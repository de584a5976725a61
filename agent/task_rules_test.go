package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent"
)

// TestTaskRules: the rules of docs/tasks.md on plans, repeats, retries, groups, priorities, expiry,
// parking and re-runs, as a role that inserts its tasks sees them.
func TestTaskRules(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, func(o *agent.Options) { o.TaskRuns = 8 })
	d.exec(t, "CREATE TABLE spans (grp text, task int, s timestamptz, e timestamptz); GRANT ALL ON spans TO PUBLIC")
	ctx := context.Background()
	wait := 20 * time.Second

	t.Run("later", func(t *testing.T) {
		t.Parallel()
		var id int64
		var plan time.Time
		if err := d.as.QueryRow(ctx, "INSERT INTO task (plan, input) VALUES (now() + interval '700 ms', 'SELECT 1') RETURNING id, plan").Scan(&id, &plan); err != nil {
			t.Fatal(err)
		}
		if r := d.waitTask(t, id, wait, "DONE"); r.Start.Before(plan) {
			t.Errorf("started %s, before its plan %s", r.Start, plan)
		}
	})
	t.Run("repeat on the grid", func(t *testing.T) {
		t.Parallel()
		id := d.insert(t, "repeat, input, \"group\"", "1 hour", "SELECT 'again'", "repeat")
		first := d.waitTask(t, id, wait, "DONE")
		var child int64
		var plan time.Time
		if err := d.as.QueryRow(ctx, "SELECT id, plan FROM task WHERE parent = $1", id).Scan(&child, &plan); err != nil {
			t.Fatalf("the next row of a repeating task: %v", err)
		}
		if want := first.Plan.Add(time.Hour); !plan.Equal(want) {
			t.Errorf("next plan %s, want %s (the first plan plus the period)", plan, want)
		}
		if r, _ := d.row(t, child); r.State != "PLAN" || r.Output != nil {
			t.Errorf("next row %+v", r)
		}
	})
	t.Run("retries with back-off", func(t *testing.T) {
		t.Parallel()
		id := d.insert(t, "retries, retry_delay, input", 2, "50 ms", "SELECT 1/0")
		r := d.waitTask(t, id, wait, "FAIL")
		if r.Attempt != 3 || !strings.HasPrefix(deref(r.Error).(string), "ERROR:  division by zero") {
			t.Errorf("attempt %d, error %q; want 3 attempts", r.Attempt, deref(r.Error))
		}
	})
	t.Run("class 42 is not retried", func(t *testing.T) {
		t.Parallel()
		id := d.insert(t, "retries, retry_delay, input", 3, "50 ms", "SELECT no_such_function()")
		if r := d.waitTask(t, id, wait, "FAIL"); r.Attempt != 1 {
			t.Errorf("attempt %d, want 1: an undefined function fails the same way again", r.Attempt)
		}
	})
	t.Run("max 1 runs two at once", func(t *testing.T) {
		t.Parallel()
		ids := insertSpans(t, d, "two", 0, 6, "max", 1)
		for _, id := range ids {
			d.waitTask(t, id, wait, "DONE")
		}
		if n := maxOverlap(t, d, "two"); n != 2 {
			t.Errorf("at most %d ran at once, want 2", n)
		}
	})
	t.Run("negative max spaces the group", func(t *testing.T) {
		t.Parallel()
		// On the grid of the first plan (drift off), and 400 ms after each end (drift on).
		for _, drift := range []bool{false, true} {
			grp := fmt.Sprintf("spaced %v", drift)
			var ids []int64
			for i := 0; i < 3; i++ {
				ids = append(ids, d.insert(t, "\"group\", max, drift, input", grp, -400, drift,
					fmt.Sprintf("SELECT pg_sleep(0.15); INSERT INTO spans SELECT '%s', %d, now(), clock_timestamp()", grp, i)))
			}
			var rows []taskRow
			for _, id := range ids {
				rows = append(rows, d.waitTask(t, id, wait, "DONE"))
			}
			if n := maxOverlap(t, d, grp); n != 1 {
				t.Errorf("%s: at most %d ran at once, want 1", grp, n)
			}
			for i := 1; i < len(rows); i++ {
				if !drift && !rows[i].Plan.Equal(rows[i-1].Plan.Add(400*time.Millisecond)) {
					t.Errorf("%s: task %d planned at %s, want 400 ms after the plan before it (%s)", grp, i+1, rows[i].Plan, rows[i-1].Plan)
				}
				if drift && rows[i].Start.Sub(*rows[i-1].Stop) < 400*time.Millisecond {
					t.Errorf("%s: task %d started %s after the end of the one before it, want 400 ms at least", grp, i+1, rows[i].Start.Sub(*rows[i-1].Stop))
				}
				if rows[i].Start.Before(rows[i].Plan) {
					t.Errorf("%s: task %d started before its plan", grp, i+1)
				}
			}
		}
	})
	t.Run("priority first", func(t *testing.T) {
		t.Parallel()
		// While a task of the group (one at a time) runs, three tasks and then a fourth of a
		// higher priority wait: the fourth runs first.
		d.insert(t, "\"group\", input", "prio", "SELECT pg_sleep(0.5)")
		ids := insertSpans(t, d, "prio", 0, 3, "priority", 0)
		high := insertSpans(t, d, "prio", 3, 1, "priority", 10)
		for _, id := range append(ids, high...) {
			d.waitTask(t, id, wait, "DONE")
		}
		var first int64
		if err := d.su.QueryRow(ctx, "SELECT task FROM spans WHERE grp = 'prio' ORDER BY s LIMIT 1").Scan(&first); err != nil {
			t.Fatal(err)
		}
		if first != int64(len(ids)) {
			rows, _ := d.su.Query(ctx, "SELECT format('%s %s %s', task, s, e) FROM spans WHERE grp = 'prio' ORDER BY s")
			all, _ := pgx.CollectRows(rows, pgx.RowTo[string])
			t.Errorf("the first to run was task %d, want the high-priority one (%d): %v", first, len(ids), all)
		}
	})
	t.Run("expired", func(t *testing.T) {
		t.Parallel()
		id := d.insert(t, "plan, input", time.Now().Add(-2*time.Hour), "SELECT 1")
		r := d.waitTask(t, id, wait, "GONE")
		if deref(r.Error) != "task not active" || r.Start == nil || !r.Start.Equal(r.Plan.Add(time.Hour)) || !r.Stop.Equal(*r.Start) {
			t.Errorf("%+v: want error 'task not active', start = stop = plan + 1 hour", r)
		}
	})
	t.Run("parked, released, run again", func(t *testing.T) {
		t.Parallel()
		id := d.insert(t, "state, input, delete", "STOP", "SELECT 'ran'", false)
		barrier := d.insert(t, "input", "SELECT 1")
		d.waitTask(t, barrier, wait, "DONE")
		if r, _ := d.row(t, id); r.State != "STOP" {
			t.Fatalf("parked task: %s", r.State)
		}
		mustExecAs(t, d.as, "UPDATE task SET state = 'PLAN' WHERE id = $1", id)
		d.waitTask(t, id, wait, "DONE")
		mustExecAs(t, d.as, "UPDATE task SET state = 'PLAN' WHERE id = $1", id)
		if r := d.waitTask(t, id, wait, "DONE"); r.Attempt != 2 {
			t.Errorf("run again: attempt %d, want 2", r.Attempt)
		}
		_, err := d.as.Exec(ctx, "UPDATE task SET state = 'WORK' WHERE id = $1", id)
		if err == nil || !strings.Contains(err.Error(), "cannot change from DONE to WORK") {
			t.Errorf("DONE to WORK: %v", err)
		}
	})
	t.Run("sessions: reused, reset, saved, count", func(t *testing.T) {
		t.Parallel()
		// One at a time, as a role of its own, so that each takes the session the one before left.
		own := d
		own.role = cluster.NewRole(t, "sessions", d.name)
		own.as = newPool(t, d.name, own.role)
		run := func(columns string, values ...any) taskRow {
			id := own.insert(t, "delete, "+columns, append([]any{false}, values...)...)
			return own.waitTask(t, id, wait, "DONE", "FAIL")
		}
		a := run("input", "CREATE TEMP TABLE kept (n int); SELECT pg_backend_pid()")
		b := run("input", "SELECT count(*) FROM pg_tables WHERE tablename = 'kept'; SELECT pg_backend_pid()")
		if deref(b.Output) != "0\n"+deref(a.Output).(string)[len("CREATE TABLE\n"):] {
			t.Errorf("after a reset: %q, want the same session (%q) without the temporary table", deref(b.Output), deref(a.Output))
		}
		run("input, save", "CREATE TEMP TABLE saved (n int)", true)
		if c := run("input", "SELECT count(*) FROM saved"); deref(c.Output) != "0" {
			t.Errorf("after a task with save on: %q %q, want its temporary table", deref(c.Output), deref(c.Error))
		}
		first := run("input, count", "SELECT pg_backend_pid()", 1)
		if next := run("input", "SELECT pg_backend_pid()"); deref(next.Output) == deref(first.Output) {
			t.Errorf("a task with count 1 left its session (%v) to the next", deref(first.Output))
		}
	})
	t.Run("parent", func(t *testing.T) {
		t.Parallel()
		id := d.insert(t, "input", "INSERT INTO task (input, delete) VALUES ('SELECT 2', false)")
		d.waitTask(t, id, wait, "DONE")
		var parent int64
		if err := d.as.QueryRow(ctx, "SELECT parent FROM task WHERE input = 'SELECT 2'").Scan(&parent); err != nil || parent != id {
			t.Errorf("parent %d (%v), want %d", parent, err, id)
		}
	})
}

// insertSpans inserts n tasks of group grp, each recording its span in spans with its number,
// with column set to value; it returns their ids.
func insertSpans(t *testing.T, d taskDB, grp string, offset, n int, column string, value any) []int64 {
	t.Helper()
	var ids []int64
	for i := 0; i < n; i++ {
		ids = append(ids, d.insert(t, "\"group\", "+column+", input", grp, value,
			fmt.Sprintf("SELECT pg_sleep(0.15); INSERT INTO spans SELECT '%s', %d, now(), clock_timestamp()", grp, i+offset)))
	}
	return ids
}

// maxOverlap returns the most spans of group grp that overlapped at one instant.
func maxOverlap(t *testing.T, d taskDB, grp string) int {
	t.Helper()
	var n int
	if err := d.su.QueryRow(context.Background(), `SELECT max((SELECT count(*) FROM spans b WHERE b.grp = a.grp AND b.s <= a.s AND b.e > a.s))
		FROM spans a WHERE a.grp = $1`, grp).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustExecAs(t *testing.T, conn *pgxpool.Pool, sql string, args ...any) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
