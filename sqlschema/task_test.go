package sqlschema_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestTaskTableRefusesWhatUsersMayNotDo: as an ordinary LOGIN role, with every trick of the
// agent's own writes (its writer mark, its functions, its guard for another role), alice can
// neither act on bob's tasks nor move her own through states only the agent sets.
func TestTaskTableRefusesWhatUsersMayNotDo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enabledDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	asAlice, asBob := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	var bobTask, bobOid int64
	if err := asBob.QueryRow(ctx, "INSERT INTO task (input) VALUES ('SELECT 1') RETURNING id, owner::oid::bigint").Scan(&bobTask, &bobOid); err != nil {
		t.Fatal(err)
	}
	var own int64
	if err := asAlice.QueryRow(ctx, "INSERT INTO task (input) VALUES ('SELECT 2') RETURNING id").Scan(&own); err != nil {
		t.Fatal(err)
	}
	if n := queryString(t, asAlice, "SELECT count(*)::text FROM task"); n != "1" {
		t.Fatalf("alice sees %s tasks, want her own only", n)
	}
	for _, c := range []struct{ sql, code, text string }{
		{"INSERT INTO task (input, owner) VALUES ('SELECT 1', '" + bob + "')", "42501", "is not the inserting role"},
		{fmt.Sprintf("UPDATE task SET owner = '%s' WHERE id = %d", bob, own), "42501", "cannot be changed"},
		{"INSERT INTO task (input, state) VALUES ('SELECT 1', 'WORK')", "23514", "a new task is PLAN or STOP"},
		{fmt.Sprintf("UPDATE task SET state = 'DONE' WHERE id = %d", own), "23514", fmt.Sprintf("task %d: the state cannot change from PLAN to DONE", own)},
		{fmt.Sprintf("SET pgjobs.task_writer = 'agent'; UPDATE task SET state = 'TAKE' WHERE id = %d", own), "23514", "cannot change from PLAN to TAKE"},
		{"SELECT * FROM pgjobs.pgj_task_claim_(0, 10, 10, '{}')", "42501", "permission denied"},
		{fmt.Sprintf("SELECT * FROM pgjobs.pgj_task_ends_(0, '{%d}', '{1}', '{now}', '{now}', '{x}', '{NULL}', '{NULL}', '{NULL}', '{NULL}', '{f}')", bobTask), "42501", "permission denied"},
		{"SELECT pgjobs.pgj_task_reset_(0, '{}')", "42501", "permission denied"},
		{fmt.Sprintf("SELECT pgjobs.pgj_task_begin_(%d, %d, 0)", bobTask, bobOid), "42501", "not as the task's owner"},
		{"TRUNCATE task", "42501", "permission denied"},
		// Found by the attacker review: each made every role's tasks stop.
		{"INSERT INTO task (id, input) OVERRIDING SYSTEM VALUE VALUES (1000000, 'SELECT 1')", "42501", "permission denied"},
		{"INSERT INTO task (attempt, input) VALUES (2147483647, 'SELECT 1')", "42501", "attempt, pid, start and stop are the agent's"},
		{fmt.Sprintf("UPDATE task SET attempt = 2147483647 WHERE id = %d", own), "42501", "attempt, pid, start and stop are the agent's"},
		{"INSERT INTO task (active, input) VALUES ('178000000 years', 'SELECT 1')", "23514", "task_active_range"},
		{"INSERT INTO task (plan, repeat, input) VALUES ('-infinity', '1 hour', 'SELECT 1')", "23514", "task_plan_range"},
		{"INSERT INTO task (retry_delay, input) VALUES ('178000000 years', 'SELECT 1')", "23514", "task_retry_delay_range"},
		{"INSERT INTO task (timeout, input) VALUES ('100 days', 'SELECT 1')", "23514", "task_timeout_range"},
		{"INSERT INTO task (remote, input) VALUES ('', 'SELECT 1')", "23514", "task_remote_not_empty"},
		// Found by the second attack review: parts that cancel out passed a whole comparison and
		// overflowed in the agent's statements; huge compressible inputs filled the agent's memory.
		{"INSERT INTO task (active, input) VALUES (interval '300000 years -108000000 days 1 hour', 'SELECT 1')", "23514", "task_active_range"},
		{"INSERT INTO task (repeat, input) VALUES (interval '1 month -29 days', 'SELECT 1')", "23514", "task_repeat_range"},
		{"INSERT INTO task (input) SELECT 'SELECT 1 --' || repeat('x', 2000000)", "23514", "task_input_size"},
		// Found by the third pass: an expiry of infinity failed the agent's next-plan look.
		{"INSERT INTO task (plan, input) VALUES ('200001-01-01', 'SELECT 1')", "23514", "task_plan_range"},
		{fmt.Sprintf("UPDATE task SET output = 'forged' WHERE id = %d", own), "42501", "permission denied"},
	} {
		wantError(t, asAlice, c.sql, c.code, c.text)
		mustExec(t, asAlice, "RESET ALL")
	}
	for _, sql := range []string{"UPDATE task SET input = 'SELECT 3', state = 'STOP'"} {
		if _, err := asAlice.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	if got := queryString(t, asBob, "SELECT state || ' ' || input FROM task WHERE id = $1", bobTask); got != "PLAN SELECT 1" {
		t.Fatalf("bob's task after alice's statements: %q", got)
	}
	// A role's own mark of the agent's writes does not keep its inserts from waking the agent.
	listener := cluster.Connect(t, db)
	mustExec(t, listener, "LISTEN pgjobs_task")
	mustExec(t, asAlice, "SET pgjobs.task_writer = 'agent'; INSERT INTO task (input) VALUES ('SELECT 4'); RESET pgjobs.task_writer")
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := listener.WaitForNotification(wait); err != nil {
		t.Fatalf("no notification for alice's insert under the agent's mark: %v", err)
	}
	// No role deletes or locks the shared table (the second attack review: LOCK TABLE in SHARE mode,
	// which DELETE allows, held every role's inserts); a row in TAKE or WORK is the agent's.
	for _, sql := range []string{"DELETE FROM task", "BEGIN; LOCK TABLE pgjobs.task IN SHARE MODE", "BEGIN; LOCK TABLE pgjobs.task IN ACCESS EXCLUSIVE MODE"} {
		wantError(t, asAlice, sql, "42501", "permission denied")
		mustExec(t, asAlice, "ROLLBACK")
	}
	mustExec(t, cluster.Connect(t, db), fmt.Sprintf("BEGIN; SET LOCAL pgjobs.task_writer = 'agent'; UPDATE task SET state = 'TAKE' WHERE id = %d; COMMIT", own))
	wantError(t, asAlice, fmt.Sprintf("UPDATE task SET priority = 5 WHERE id = %d", own), "55006", "the agent's until it ends")
	// A bad default from a setting names it.
	wantError(t, asAlice, "SET pgjobs.task_max = 'many'; INSERT INTO task (input) VALUES ('SELECT 1')", "22023", "pgjobs.task_max = 'many' is not a value of column max")
}

// TestTaskPrune: the ended tasks older than task_retention go, the others stay.
func TestTaskPrune(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enabledDatabase(t)
	conn := cluster.Connect(t, db)
	// The agent's mark lets the superuser write ended rows as the agent would.
	mustExec(t, conn, `BEGIN; SET LOCAL pgjobs.task_writer = 'agent';
		INSERT INTO task (input, state, stop) VALUES
			('old', 'DONE', now() - interval '8 days'), ('old', 'FAIL', now() - interval '8 days'),
			('old', 'GONE', now() - interval '8 days'), ('recent', 'DONE', now() - interval '2 days'),
			('waiting', 'PLAN', now() - interval '9 days');
		COMMIT`)
	count := func() string {
		return queryString(t, conn, "SELECT string_agg(input, ',' ORDER BY id) FROM task")
	}
	if n, err := sqlschema.TaskPrune(ctx, conn); err != nil || n != 3 || count() != "recent,waiting" {
		t.Fatalf("pruned %d (%v), left %s; want 3, recent and waiting", n, err, count())
	}
	mustExec(t, conn, "SELECT pgj_set_setting('task_retention', '1 day')")
	if n, err := sqlschema.TaskPrune(ctx, conn); err != nil || n != 1 || count() != "waiting" {
		t.Fatalf("with task_retention 1 day: pruned %d (%v), left %s", n, err, count())
	}
	var rows pgx.Rows
	rows, _ = conn.Query(ctx, "SELECT name FROM pgj_settings WHERE name = 'task_retention'")
	if names, err := pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || len(names) != 1 {
		t.Fatalf("pgj_settings: %v %v", names, err)
	}
}

// TestUpgradeFromVersion4AddsTheTaskTable: a database enabled before tasks existed gets the task
// table from the upgrade, visible unqualified to every role, with its setting.
func TestUpgradeFromVersion4AddsTheTaskTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	conn := cluster.Connect(t, db)
	if err := sqlschema.InstallVersion(ctx, conn, 4); err != nil {
		t.Fatal(err)
	}
	if from, to, err := sqlschema.Upgrade(ctx, conn); err != nil || from != 4 || to != sqlschema.Latest() {
		t.Fatalf("Upgrade = %d, %d, %v", from, to, err)
	}
	alice := cluster.NewRole(t, "alice", db)
	asAlice := cluster.ConnectAs(t, db, alice)
	if got := queryString(t, asAlice, "INSERT INTO task (input) VALUES ('SELECT 1') RETURNING state::text || ' ' || owner::text"); got != "PLAN "+alice {
		t.Fatalf("a task after the upgrade: %q", got)
	}
	if got := queryString(t, asAlice, "SELECT value FROM pgj_settings WHERE name = 'task_retention'"); got != "7 days" {
		t.Fatalf("task_retention = %q", got)
	}
}

// TestTaskClaimSeesPastAFutureBacklog: a ready task behind hundreds of a role's higher-priority
// tasks planned later is still claimed (the claim looks at each role's first waiting rows in
// claim order, and at its ready rows planned first), and another role's ready task too.
func TestTaskClaimSeesPastAFutureBacklog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enabledDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	mustExec(t, cluster.ConnectAs(t, db, alice), `INSERT INTO task ("group", priority, plan, input)
		SELECT 'later' || g, 10, now() + interval '1 day', 'SELECT 1' FROM generate_series(1, 300) g;
		INSERT INTO task (input) VALUES ('SELECT ''ready''')`)
	mustExec(t, cluster.ConnectAs(t, db, bob), "INSERT INTO task (input) VALUES ('SELECT ''bob''')")
	claimed, err := sqlschema.TaskClaim(ctx, cluster.Connect(t, db), 0, 8, 7, nil)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []string
	for _, c := range claimed {
		inputs = append(inputs, c.Input)
	}
	if len(inputs) != 2 || !slices.Contains(inputs, "SELECT 'ready'") || !slices.Contains(inputs, "SELECT 'bob'") {
		t.Fatalf("claimed %q, want alice's ready task and bob's", inputs)
	}
}

// TestTaskClaimFindsFreeGroupsBehindFullOnes: 300 of alice's ready tasks wait in a group whose one
// place is taken, ahead of her tasks in five other groups in claim order; the claim still finds
// those five (the walk over her groups), and never the full group's.
func TestTaskClaimFindsFreeGroupsBehindFullOnes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enabledDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	mustExec(t, cluster.ConnectAs(t, db, alice), `INSERT INTO task ("group", input) SELECT 'full', 'SELECT 1' FROM generate_series(1, 300);
		INSERT INTO task ("group", input) SELECT 'free' || g, 'SELECT 2' FROM generate_series(1, 5) g`)
	admin := cluster.Connect(t, db)
	if first, err := sqlschema.TaskClaim(ctx, admin, 0, 1, 100, nil); err != nil || len(first) != 1 || first[0].Input != "SELECT 1" {
		t.Fatalf("first claim = %+v, %v; want the full group's head", first, err)
	}
	claimed, err := sqlschema.TaskClaim(ctx, admin, 0, 8, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	var inputs []string
	for _, c := range claimed {
		inputs = append(inputs, c.Input)
	}
	if len(inputs) != 5 || slices.Contains(inputs, "SELECT 1") {
		t.Fatalf("claimed %q, want the five tasks of the free groups", inputs)
	}
}
