package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestTaskProvenByAnAgentGoneIsNotRunAgain: an agent died after three of its tasks' inputs ran. The
// two whose transaction committed with its proof end DONE, their output lost, and do not run again
// (the repeating one gets its next row); the one whose transaction did not commit runs again.
func TestTaskProvenByAnAgentGoneIsNotRunAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := newTestDB(t)
	role := cluster.NewRole(t, "alice", db.name)
	db.exec(t, "CREATE TABLE eff (k int); GRANT ALL ON eff TO PUBLIC")
	as := newPool(t, db.name, role)
	for _, sql := range []string{
		`INSERT INTO task ("group", input) VALUES ('a', 'INSERT INTO eff VALUES (1)')`,
		`INSERT INTO task ("group", input) VALUES ('b', 'INSERT INTO eff VALUES (2)')`,
		`INSERT INTO task ("group", input, repeat) VALUES ('c', 'INSERT INTO eff VALUES (3)', '1 hour')`,
	} {
		if _, err := as.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	// The agent gone: its term's key, its claim, and the inputs it sent with their proofs.
	key := []byte(strings.Repeat("g", 32))
	if err := sqlschema.TaskKey(ctx, db.conn, 0, key); err != nil {
		t.Fatal(err)
	}
	claimed, err := sqlschema.TaskClaim(ctx, db.conn, 0, 8, 7, nil)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim = %d tasks, %v", len(claimed), err)
	}
	conn, err := as.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	pid := conn.Conn().PgConn().PID()
	ids := map[string]int64{}
	for _, c := range claimed {
		k := c.Input[len(c.Input)-2 : len(c.Input)-1]
		ids[k] = c.ID
		if k == "2" {
			continue // died before this one committed
		}
		if _, err := conn.Exec(ctx, c.Input+sqlschema.TaskProofSQL(0, c.ID, c.Attempt, pid, key)); err != nil {
			t.Fatal(err)
		}
	}
	ended := &endedTasks{changed: make(chan struct{})}
	startAgentWith(t, agent.RealClock{}, func(o *agent.Options) {
		o.Start = time.Time{}
		o.OnTasksWritten = ended.report
	}, db)
	d := taskDB{testDB: db, role: role, as: as, su: newPool(t, db.name, ""), ended: ended}
	for _, k := range []string{"1", "3"} {
		r := d.waitTask(t, ids[k], 20*time.Second, "DONE", "FAIL")
		if r.State != "DONE" || r.Attempt != 1 || !strings.Contains(deref(r.Error).(string), "its output was lost: the agent that ran attempt 1 ended") {
			t.Errorf("task %s: %s, attempt %d, error %q", k, r.State, r.Attempt, deref(r.Error))
		}
	}
	if r := d.waitTask(t, ids["2"], 20*time.Second, "DONE", "FAIL"); r.State != "DONE" || r.Attempt != 2 || r.Error != nil {
		t.Errorf("task 2: %s, attempt %d, error %q", r.State, r.Attempt, deref(r.Error))
	}
	var counts string
	if err := db.conn.QueryRow(ctx, "SELECT string_agg(k || ':' || n, ' ' ORDER BY k) FROM (SELECT k, count(*) n FROM eff GROUP BY k) c").Scan(&counts); err != nil {
		t.Fatal(err)
	}
	if counts != "1:1 2:1 3:1" {
		t.Errorf("effects %s, want each once", counts)
	}
	var next int
	if err := db.conn.QueryRow(ctx, "SELECT count(*) FROM pgjobs.task WHERE parent = $1 AND state = 'PLAN'", ids["3"]).Scan(&next); err != nil || next != 1 {
		t.Errorf("next rows of the repeating task: %d, %v", next, err)
	}
}

// TestTaskProofLeavesInputsAlone: the proof after the input changes neither its output nor what it
// may do: statements that cannot run in a transaction block, a procedure that commits, an input
// ending in a comment or without its semicolon, a syntax error's text.
func TestTaskProofLeavesInputsAlone(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	d.exec(t, "CREATE TABLE v (n int); ALTER TABLE v OWNER TO "+d.role+"; GRANT CREATE ON SCHEMA public TO "+d.role+`;
		CREATE PROCEDURE commits() LANGUAGE plpgsql AS $$ BEGIN INSERT INTO v VALUES (1); COMMIT; INSERT INTO v VALUES (2); END $$;
		CREATE PROCEDURE noop() LANGUAGE sql AS $$ SELECT 1 $$;
		GRANT ALL ON PROCEDURE commits(), noop() TO PUBLIC`)
	for _, c := range []struct {
		name, input   string
		state         string
		output, error any
	}{
		{"create index concurrently", "CREATE INDEX CONCURRENTLY v_n ON v (n)", "DONE", "CREATE INDEX", nil},
		{"procedure that commits", "CALL commits()", "DONE", "CALL", nil},
		{"procedure's tag", "CALL noop(); SELECT 1 AS a", "DONE", "CALL\n1", nil},
		{"procedure's tag last", "SELECT 1 AS a; CALL noop()", "DONE", "1\nCALL", nil},
		{"line comment", "SELECT 1 AS a -- the end", "DONE", "1", nil},
		{"no semicolon", "SELECT 1 AS a", "DONE", "1", nil},
		{"syntax error", "SELEC 1", "FAIL", nil, "ERROR:  syntax error at or near \"SELEC\"\nSQLSTATE:  42601\nSTATEMENT:  SELEC 1"},
		{"unterminated comment", "SELECT 1 /* open", "FAIL", nil, "ERROR:  unterminated /* comment at or near \"/* open\"\nSQLSTATE:  42601\nSTATEMENT:  SELECT 1 /* open"},
		{"vacuum after a statement", "SELECT 1; VACUUM v", "FAIL", "1", "ERROR:  VACUUM cannot run inside a transaction block\nSQLSTATE:  25001\nSTATEMENT:  SELECT 1; VACUUM v"},
		// Found by the README-only attack: it ended DONE, its work rolled back without a word.
		{"transaction left open", "INSERT INTO v VALUES (3); BEGIN", "FAIL", "INSERT 0 1\nBEGIN", "ERROR:  the input left a transaction open (BEGIN without COMMIT): its work was rolled back\nSTATEMENT:  INSERT INTO v VALUES (3); BEGIN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := d.insert(t, "input, delete", c.input, false)
			r := d.waitTask(t, id, 20*time.Second, "DONE", "FAIL")
			if r.State != c.state || deref(r.Output) != c.output || deref(r.Error) != c.error {
				t.Errorf("state %s, output %q, error %q; want %s, %q, %q", r.State, deref(r.Output), deref(r.Error), c.state, c.output, c.error)
			}
		})
	}
	var rows int
	if err := d.conn.QueryRow(context.Background(), "SELECT count(*) FROM v").Scan(&rows); err != nil || rows != 2 {
		t.Errorf("the procedure that commits wrote %d rows (%v), want 2", rows, err)
	}
}

// TestTaskOnAnEndedSessionRunsOnAnother (found by the chaos program): the owner's idle session
// ended under the agent (a server restart, pg_terminate_backend); the next task, which would get
// it, runs on another session instead of failing with the broken session before its input was
// sent.
func TestTaskOnAnEndedSessionRunsOnAnother(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := newTaskDB(t, nil)
	first := d.insert(t, "input, delete", "SELECT 1", false)
	d.waitTask(t, first, 20*time.Second, "DONE")
	var ended int
	if err := d.su.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE usename = $1 AND datname = current_database() AND state = 'idle' AND application_name LIKE 'pgjobs%'`, d.role).Scan(&ended); err != nil || ended == 0 {
		t.Fatalf("ended %d idle sessions of %s: %v", ended, d.role, err)
	}
	next := d.insert(t, "input, delete, retries", "SELECT 2", false, 0)
	if r := d.waitTask(t, next, 20*time.Second, "DONE", "FAIL"); r.State != "DONE" || r.Attempt != 1 {
		t.Fatalf("the task after the session ended: %s, attempt %d, error %q", r.State, r.Attempt, deref(r.Error))
	}
}

// TestTaskClaimedAheadExpires (found by the code review): a one-shot task claimed ahead while the
// only slot runs a long task, whose plan + active passes while it waits, goes GONE with `task not
// active` instead of running late, as it would had it waited unclaimed.
func TestTaskClaimedAheadExpires(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, func(o *agent.Options) { o.TaskRuns = 1 })
	long := d.insert(t, `"group", input`, "long", "SELECT pg_sleep(3)")
	d.waitTask(t, long, 20*time.Second, "WORK")
	late := d.insert(t, `"group", active, input`, "late", "1 second", "SELECT 1")
	r := d.waitTask(t, late, 20*time.Second, "DONE", "FAIL", "GONE")
	if r.State != "GONE" || deref(r.Error) != "task not active" {
		t.Fatalf("the task claimed ahead past its active: %s, error %q", r.State, deref(r.Error))
	}
}
