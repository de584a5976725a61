package agent_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
)

// TestTaskOutputAndErrors: the examples of docs/tasks.md, "Output" and "Errors", run by the agent.
func TestTaskOutputAndErrors(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	d.exec(t, "CREATE TABLE tab (n int); GRANT ALL ON tab TO PUBLIC")
	for _, c := range []struct {
		name, columns string
		values        []any
		state         string
		output, error any
	}{
		{"one column", "input", []any{"SELECT 1 AS a"}, "DONE", "1", nil},
		{"two columns", "input", []any{"SELECT 1 AS a, 2 AS b"}, "DONE", "a\tb\n1\t2", nil},
		{"two statements", "input", []any{"SELECT 1 AS a;SELECT 2 AS b"}, "DONE", "1\n2", nil},
		{"null", "input", []any{"SELECT NULL::int AS a, 1 AS b"}, "DONE", "a\tb\n\\N\t1", nil},
		{"quote", "input, quote", []any{"SELECT 1 AS n, 'x' AS s", `"`}, "DONE", "\"n\"\t\"s\"\n1\t\"x\"", nil},
		{"delimiter without header", "input, delimiter, header", []any{"SELECT 1 AS a, 2 AS b", ",", false}, "DONE", "1,2", nil},
		{"command tags", "input", []any{"INSERT INTO tab VALUES (1); DELETE FROM tab WHERE false; CREATE TEMP TABLE x (a int)"}, "DONE", "INSERT 0 1\nDELETE 0\nCREATE TABLE", nil},
		{"copy", "input", []any{"COPY (SELECT g FROM generate_series(1, 3) g) TO STDOUT"}, "DONE", "1\n2\n3", nil},
		{"copy from stdin", "input", []any{"COPY tab FROM STDIN"}, "FAIL", nil, "ERROR:  COPY from stdin failed: COPY FROM STDIN has no data in a task: the input cannot send any\nCONTEXT:  COPY tab, line 1\nSQLSTATE:  57014\nSTATEMENT:  COPY tab FROM STDIN"},
		{"division by zero", "input", []any{"SELECT 1/0 AS a"}, "FAIL", nil, "ERROR:  division by zero\nSQLSTATE:  22012\nSTATEMENT:  SELECT 1/0 AS a"},
		{"output before the error", "input", []any{"SELECT 1 AS a; SELECT 1/0"}, "FAIL", "1", "ERROR:  division by zero\nSQLSTATE:  22012\nSTATEMENT:  SELECT 1 AS a; SELECT 1/0"},
		{"detail and hint", "input", []any{"SELECT fail()"}, "FAIL", nil, "ERROR:  failing on purpose\nDETAIL:  the detail\nHINT:  the hint\nCONTEXT:  PL/pgSQL function fail() line 1 at RAISE\nSQLSTATE:  P0042\nSTATEMENT:  SELECT fail()"},
		{"timeout", "input, timeout", []any{"SELECT pg_sleep(10)", "100 ms"}, "FAIL", nil, "ERROR:  canceling statement due to statement timeout\nSQLSTATE:  57014\nSTATEMENT:  SELECT pg_sleep(10)"},
		{"kept when something came", "input", []any{"SELECT ''"}, "DONE", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := d.insert(t, c.columns, c.values...)
			r := d.waitTask(t, id, 15*time.Second, "DONE", "FAIL")
			if r.State != c.state || deref(r.Output) != c.output || deref(r.Error) != c.error {
				t.Errorf("state %s, output %q, error %q; want %s, %q, %q", r.State, deref(r.Output), deref(r.Error), c.state, c.output, c.error)
			}
			if r.PID == nil || r.Start == nil || r.Stop == nil || r.Stop.Before(*r.Start) || r.Attempt != 1 {
				t.Errorf("pid %v, start %v, stop %v, attempt %d", deref(r.PID), deref(r.Start), deref(r.Stop), r.Attempt)
			}
		})
	}
	// A task that produced nothing is deleted, unless its delete is off.
	gone := d.insert(t, "input", "SELECT 1 WHERE false")
	kept := d.insert(t, "input, delete", "SELECT 1 WHERE false", false)
	d.waitTask(t, gone, 15*time.Second, "gone")
	if r := d.waitTask(t, kept, 15*time.Second, "DONE"); r.Output != nil || r.Error != nil {
		t.Errorf("kept task: output %q, error %q", deref(r.Output), deref(r.Error))
	}
}

// TestTaskRunsAsItsOwner: a task runs on a session of its owner, which RESET ROLE and RESET SESSION
// AUTHORIZATION do not leave, and a role sees and changes only its own tasks.
func TestTaskRunsAsItsOwner(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	id := d.insert(t, "input", "RESET ROLE; RESET SESSION AUTHORIZATION; SELECT session_user, current_user")
	r := d.waitTask(t, id, 15*time.Second, "DONE", "FAIL")
	want := "RESET\nRESET\nsession_user\tcurrent_user\n" + d.role + "\t" + d.role
	if deref(r.Output) != want {
		t.Fatalf("output %q, error %q; want %q", deref(r.Output), deref(r.Error), want)
	}
	bob := cluster.NewRole(t, "bob", d.name)
	asBob := newPool(t, d.name, bob)
	var seen int
	if err := asBob.QueryRow(context.Background(), "SELECT count(*) FROM task").Scan(&seen); err != nil || seen != 0 {
		t.Fatalf("bob sees %d tasks (%v), want 0", seen, err)
	}
	if tag, err := asBob.Exec(context.Background(), "UPDATE task SET state = 'PLAN'"); err != nil || tag.RowsAffected() != 0 {
		t.Fatalf("bob's UPDATE: %v rows, %v", tag.RowsAffected(), err)
	}
	if _, err := asBob.Exec(context.Background(), "DELETE FROM task"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("bob's DELETE: %v, want permission denied", err)
	}
	_, err := asBob.Exec(context.Background(), "INSERT INTO task (input, owner) VALUES ('SELECT 1', $1::regrole)", d.role)
	if err == nil || !strings.Contains(err.Error(), "is not the inserting role") {
		t.Fatalf("bob inserted a task owned by alice: %v", err)
	}
}

// TestRemoteTasks: a remote task runs its input on a connection of its own to the server its string
// names; a role that is not a superuser must give its password there, and the agent's own standing
// (here the cluster's trust authentication, as the agent's OS user has peer authentication) never
// lets such a task in.
func TestRemoteTasks(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	other := cluster.NewDatabase(t)
	remote := cluster.NewRole(t, "remote", other)
	cluster.RequirePassword(t, remote, "s3cret")
	tcp := fmt.Sprintf("host=127.0.0.1 port=%d dbname=%s", cluster.Port(), other)
	for _, c := range []struct {
		name, remote, state, output, error string
	}{
		{"with its password", tcp + " user=" + remote + " password=s3cret", "DONE", "current_user\tcurrent_database\n" + remote + "\t" + other, ""},
		{"a URI", fmt.Sprintf("postgres://%s:s3cret@127.0.0.1:%d/%s", remote, cluster.Port(), other), "DONE", "current_user\tcurrent_database\n" + remote + "\t" + other, ""},
		{"a wrong password", tcp + " user=" + remote + " password=wrong", "FAIL", "", "password authentication failed"},
		{"no password", tcp + " user=" + remote, "FAIL", "", "must give its password in the connection string"},
		{"the agent's files", tcp + " user=" + remote + " password=s3cret servicefile=/etc/shadow service=x", "FAIL", "", "may not use the agent's files"},
		{"the agent's trust", fmt.Sprintf("host=%s port=%d dbname=%s user=%s password=anything", cluster.Host(), cluster.Port(), other, cluster.User()), "FAIL", "", "let the task in without asking for its password"},
	} {
		t.Run(c.name, func(t *testing.T) {
			id := d.insert(t, "input, remote, retries, retry_delay", "SELECT current_user, current_database()", c.remote, 2, "10 ms")
			r := d.waitTask(t, id, 20*time.Second, "DONE", "FAIL")
			if r.State != c.state || (c.output != "" && deref(r.Output) != c.output) || (c.error != "" && !strings.Contains(fmt.Sprint(deref(r.Error)), c.error)) {
				t.Fatalf("state %s, output %q, error %q; want %s, %q, an error with %q", r.State, deref(r.Output), deref(r.Error), c.state, c.output, c.error)
			}
			if c.state == "FAIL" && c.error != "password authentication failed" && r.Attempt != 1 {
				t.Errorf("attempt %d: a refused string fails the same way again, want no retry", r.Attempt)
			}
		})
	}
	// A superuser's remote task may use the agent's credentials.
	var id int64
	if err := d.su.QueryRow(context.Background(), "INSERT INTO task (input, remote) VALUES ('SELECT current_database()', $1) RETURNING id",
		fmt.Sprintf("host=%s port=%d dbname=%s user=%s", cluster.Host(), cluster.Port(), other, cluster.User())).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if r := d.waitTask(t, id, 20*time.Second, "DONE", "FAIL"); deref(r.Output) != other {
		t.Fatalf("a superuser's remote task: %s %q %q", r.State, deref(r.Output), deref(r.Error))
	}
}

// TestTasksTakeTurnsBetweenRoles: alice's backlog of long tasks with a high priority, in a group
// that allows them all at once, neither takes a place in bob's group of the same name nor every
// slot: bob's task, inserted after hers, starts before her eighth.
func TestTasksTakeTurnsBetweenRoles(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, func(o *agent.Options) { o.TaskRuns = 8 })
	ctx := context.Background()
	var alice []int64
	for i := 0; i < 12; i++ {
		alice = append(alice, d.insert(t, "\"group\", max, priority, input", "shared", 100, 100, "SELECT pg_sleep(3)"))
	}
	d.waitTask(t, alice[0], 20*time.Second, "WORK", "DONE")
	bob := cluster.NewRole(t, "bob", d.name)
	asBob := newPool(t, d.name, bob)
	var id int64
	if err := asBob.QueryRow(ctx, `INSERT INTO task ("group", max, input) VALUES ('shared', 0, 'SELECT 1') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	b := d.waitTask(t, id, 20*time.Second, "DONE")
	var eighth time.Time
	for eighth.IsZero() {
		var s *time.Time
		if err := d.su.QueryRow(ctx, "SELECT start FROM task WHERE id = ANY($1) AND start IS NOT NULL ORDER BY start OFFSET 7 LIMIT 1", alice).Scan(&s); err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		if s != nil {
			eighth = *s
			break
		}
		<-d.ended.next()
	}
	if !b.Start.Before(eighth) {
		t.Fatalf("bob's task started at %s, after alice's eighth (%s)", b.Start, eighth)
	}
}

// TestLockedTaskRowHoldsUpNoOneElse: alice locks the row of her own running task (SELECT ... FOR
// UPDATE in an open transaction); bob's task, which ends meanwhile, is written as usual, and
// hers once she lets go.
func TestLockedTaskRowHoldsUpNoOneElse(t *testing.T) {
	t.Parallel()
	d := newTaskDB(t, nil)
	ctx := context.Background()
	own := d.insert(t, "input", "SELECT pg_sleep(0.3)")
	d.waitTask(t, own, 20*time.Second, "WORK")
	tx, err := d.as.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT FROM task WHERE id = $1 FOR UPDATE", own); err != nil {
		t.Fatal(err)
	}
	bob := cluster.NewRole(t, "bob", d.name)
	var id int64
	if err := newPool(t, d.name, bob).QueryRow(ctx, "INSERT INTO task (input, delete) VALUES ('SELECT pg_sleep(0.5)', false) RETURNING id").Scan(&id); err != nil {
		t.Fatal(err)
	}
	d.waitTask(t, id, 20*time.Second, "DONE")
	if r, _ := d.row(t, own); r.State != "WORK" {
		t.Fatalf("alice's locked task is %s while she holds it", r.State)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	d.waitTask(t, own, 20*time.Second, "DONE")
}
