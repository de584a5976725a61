package sqlschema_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// userFunctions are the functions the specification's examples schedule.
const userFunctions = `
CREATE TABLE calls (name text, at timestamptz DEFAULT now());
CREATE FUNCTION prepare_cache() RETURNS void LANGUAGE sql AS $$ INSERT INTO calls (name) VALUES ('prepare_cache') $$;
CREATE FUNCTION off_line() RETURNS void LANGUAGE sql AS $$ INSERT INTO calls (name) VALUES ('off_line') $$;
CREATE FUNCTION end_of_day() RETURNS void LANGUAGE sql AS $$ INSERT INTO calls (name) VALUES ('end_of_day') $$;
CREATE FUNCTION f(n int, s text) RETURNS int LANGUAGE sql AS $$ SELECT n $$;
GRANT ALL ON TABLE calls TO PUBLIC;
`

// apiDatabase returns an enabled database with the example functions and a fresh session in it,
// so that the search_path enabledb set is in force.
func apiDatabase(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	db := enabledDatabase(t)
	if _, err := cluster.Connect(t, db).Exec(context.Background(), userFunctions); err != nil {
		t.Fatal(err)
	}
	return db, cluster.Connect(t, db)
}

func mustExec(t *testing.T, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// TestSpecExamples runs the examples of specification section 3 as written, each in a SELECT,
// unqualified, in a new session.
func TestSpecExamples(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, conn := apiDatabase(t)
	for _, example := range []string{
		"pgj_create_startup_job( 'StartupPrepare', 'prepare_cache()' );",
		"pgj_create_schedule( 'Daily0630', 'D 6:30' );",
		"pgj_create_schedule( 'Daily1930', 'D 19:30' );",
		"pgj_create_job( 'OffLine', 'off_line()', null, 'Daily0630' );",
		"pgj_add_job_schedule( 'OffLine', 'Daily1930' );",
		"pgj_create_job( 'OffLine2', 'off_line()', null, null );",
		"pgj_add_job_schedule( 'OffLine2', 'Daily0630' );",
		"pgj_add_job_schedule( 'OffLine2', 'Daily1930' );",
		"pgj_create_schedule( 'June1st2003', 'D 2003.06.01 0:00' );",
		"pgj_create_schedule( 'Daily2000', 'D 20:00' );",
		"pgj_create_job( 'EndOfDay', 'end_of_day()', 'June1st2003', 'Daily2000' );",
		"pgj_create_schedule( 'Examples', 'D 12.1 17:30' ); SELECT pgj_update_schedule( 'Examples', 'd -1 17:30' );",
		"pgj_update_job( 'OffLine2', 'OffLineToo', null, 'June1st2003' );",
		"pgj_drop_job_schedule( 'OffLineToo', 'Daily1930' );",
	} {
		mustExec(t, conn, "SELECT "+example)
	}

	rows, _ := conn.Query(ctx, `SELECT name, function, startup, coalesce(start_schedule, '-'),
		array_to_string(schedules, ','), array_to_string(definitions, ',') FROM pgj_jobs ORDER BY name`)
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (string, error) {
		var name, function, start, schedules, definitions string
		var startup bool
		err := row.Scan(&name, &function, &startup, &start, &schedules, &definitions)
		return strings.Join([]string{name, function, map[bool]string{true: "startup", false: "-"}[startup], start, schedules, definitions}, " | "), err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"EndOfDay | public.end_of_day() | - | June1st2003 | Daily2000 | D 20:00",
		"OffLine | public.off_line() | - | - | Daily0630,Daily1930 | D 6:30,D 19:30",
		"OffLineToo | public.off_line() | - | June1st2003 | Daily0630 | D 6:30",
		"StartupPrepare | public.prepare_cache() | startup | - |  | ",
	}
	if strings.Join(jobs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("pgj_jobs:\n%s\nwant:\n%s", strings.Join(jobs, "\n"), strings.Join(want, "\n"))
	}

	rows, _ = conn.Query(ctx, `SELECT name || ' | ' || schedule || ' | ' || array_to_string(jobs, ',') || ' | ' || array_to_string(start_of_jobs, ',')
		FROM pgj_schedules ORDER BY name`)
	schedules, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	wantSchedules := []string{
		"Daily0630 | D 6:30 | OffLine,OffLineToo | ",
		"Daily1930 | D 19:30 | OffLine | ",
		"Daily2000 | D 20:00 | EndOfDay | ",
		"Examples | D -1 17:30 |  | ",
		"June1st2003 | D 2003.06.01 0:00 |  | EndOfDay,OffLineToo",
	}
	if strings.Join(schedules, "\n") != strings.Join(wantSchedules, "\n") {
		t.Fatalf("pgj_schedules:\n%s\nwant:\n%s", strings.Join(schedules, "\n"), strings.Join(wantSchedules, "\n"))
	}

	var dropped int
	if err := conn.QueryRow(ctx, "SELECT pgj_drop_unused_schedules()").Scan(&dropped); err != nil || dropped != 1 {
		t.Fatalf("pgj_drop_unused_schedules() = %d, %v; want 1 (Examples)", dropped, err)
	}
	mustExec(t, conn, "SELECT pgj_drop_schedule('Daily1930', true)")
	mustExec(t, conn, "SELECT pgj_drop_job('EndOfDay')")
	var remaining string
	if err := conn.QueryRow(ctx, "SELECT string_agg(name, ',' ORDER BY name) FROM pgj_schedules").Scan(&remaining); err != nil {
		t.Fatal(err)
	}
	if remaining != "Daily0630,Daily2000,June1st2003" {
		t.Fatalf("schedules after the drops: %s", remaining)
	}
}

// TestAPIErrors checks each misuse: its SQLSTATE and exact message, and that nothing was written.
func TestAPIErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, conn := apiDatabase(t)
	mustExec(t, conn, `SELECT pgj_create_schedule('Daily', 'D 6:30'), pgj_create_schedule('Spare', 'W 1 7:30'),
		pgj_create_job('Job', 'off_line()', null, 'Daily')`)
	tests := []struct {
		name, sql, code, message string
	}{
		{"invalid schedule", "SELECT pgj_create_schedule('Bad', 'D 25:00')", "22023",
			"invalid schedule 'D 25:00': hour 25 is out of range 0..23"},
		{"invalid schedule on update", "SELECT pgj_update_schedule('Daily', 'D 02.30 10:00')", "22023",
			"invalid schedule 'D 02.30 10:00': month 2 has no day 30"},
		{"NULL schedule", "SELECT pgj_create_schedule('Bad', NULL)", "22004",
			"invalid schedule: NULL (a schedule such as 'D 17:30' is required)"},
		{"NULL schedule name", "SELECT pgj_create_schedule(NULL, 'D 1:00')", "22004",
			"pgj_create_schedule: argument 1 (schedule name) must not be NULL"},
		{"empty schedule name", "SELECT pgj_create_schedule(' ', 'D 1:00')", "22023",
			"pgj_create_schedule: argument 1 (schedule name) must not be empty"},
		{"duplicate schedule", "SELECT pgj_create_schedule('Daily', 'D 1:00')", "42710",
			`pgj_create_schedule: argument 1: schedule name "Daily" is already taken`},
		{"update unknown schedule", "SELECT pgj_update_schedule('Nope', 'D 1:00')", "42704",
			`pgj_update_schedule: argument 1: schedule "Nope" does not exist`},
		{"drop used schedule", "SELECT pgj_drop_schedule('Daily', false)", "2BP01",
			`pgj_drop_schedule: schedule "Daily" is used by jobs Job`},
		{"drop with NULL force", "SELECT pgj_drop_schedule('Daily', NULL)", "22004",
			"pgj_drop_schedule: argument 2 (force) must not be NULL"},
		{"drop unknown schedule", "SELECT pgj_drop_schedule('Nope', true)", "42704",
			`pgj_drop_schedule: argument 1: schedule "Nope" does not exist`},
		{"duplicate job", "SELECT pgj_create_job('Job', 'off_line()', null, null)", "42710",
			`pgj_create_job: argument 1: job name "Job" is already taken`},
		{"NULL job name", "SELECT pgj_create_job(NULL, 'off_line()', null, null)", "22004",
			"pgj_create_job: argument 1 (job name) must not be NULL"},
		{"NULL function", "SELECT pgj_create_job('J2', NULL, null, null)", "22004",
			"pgj_create_job: argument 2 (function call) must not be NULL"},
		{"unknown start schedule", "SELECT pgj_create_job('J2', 'off_line()', 'Nope', null)", "42704",
			`pgj_create_job: argument 3: schedule "Nope" does not exist`},
		{"unknown recurrence", "SELECT pgj_create_job('J2', 'off_line()', null, 'Nope')", "42704",
			`pgj_create_job: argument 4: schedule "Nope" does not exist`},
		{"second statement", "SELECT pgj_create_job('J2', 'off_line(); DROP TABLE calls', null, null)", "42601",
			`pgj_create_job: argument 2 (function call) is not one function call: a semicolon (a job runs one function call) at character 11 near "off_line(); DROP TABLE calls"`},
		{"text after the call", "SELECT pgj_create_job('J2', 'off_line() + 1', null, null)", "42601",
			`pgj_create_job: argument 2 (function call) is not one function call: text after the call's closing parenthesis at character 12 near "off_line() + 1"`},
		{"bare keyword", "SELECT pgj_create_job('J2', 'now', null, null)", "42601",
			`pgj_create_job: argument 2 (function call) is not one function call: no argument list: write the call with parentheses, such as off_line() at character 4 near "now"`},
		{"comment", "SELECT pgj_create_job('J2', 'f(1, ''x'' -- )', null, null)", "42601",
			`pgj_create_job: argument 2 (function call) is not one function call: a comment (--) at character 10 near "f(1, 'x' -- )"`},
		{"unbalanced", "SELECT pgj_create_job('J2', 'f(1, (2)', null, null)", "42601",
			`pgj_create_job: argument 2 (function call) is not one function call: the call ends before its closing parenthesis at character 9 near "f(1, (2)"`},
		{"not a name", "SELECT pgj_create_job('J2', '1 + f()', null, null)", "42601",
			`pgj_create_job: argument 2 (function call) is not one function call: expected a function name at character 1 near "1 + f()"`},
		{"typo in the function", "SELECT pgj_create_job('J2', 'of_line()', null, null)", "42883",
			`pgj_create_job: argument 2 (function call) 'of_line()' does not resolve: function of_line() does not exist`},
		{"wrong arguments", "SELECT pgj_create_startup_job('J2', 'f(''x'', 1)')", "42883",
			`pgj_create_startup_job: argument 2 (function call) 'f(''x'', 1)' does not resolve: function f(unknown, integer) does not exist`},
		{"update with a typo", "SELECT pgj_update_job('Job', null, 'offline()', null)", "42883",
			`pgj_update_job: argument 3 (function call) 'offline()' does not resolve: function offline() does not exist`},
		{"update unknown job", "SELECT pgj_update_job('Nope', 'X', null, null)", "42704",
			`pgj_update_job: argument 1: job "Nope" does not exist`},
		{"rename to empty", "SELECT pgj_update_job('Job', '', null, null)", "22023",
			"pgj_update_job: argument 2 (new job name) must not be empty"},
		{"update to unknown start", "SELECT pgj_update_job('Job', null, null, 'Nope')", "42704",
			`pgj_update_job: argument 4: schedule "Nope" does not exist`},
		{"same recurrence twice", "SELECT pgj_add_job_schedule('Job', 'Daily')", "42710",
			`pgj_add_job_schedule: job "Job" already recurs on schedule "Daily"`},
		{"add to unknown job", "SELECT pgj_add_job_schedule('Nope', 'Daily')", "42704",
			`pgj_add_job_schedule: argument 1: job "Nope" does not exist`},
		{"drop absent recurrence", "SELECT pgj_drop_job_schedule('Job', 'Spare')", "42704",
			`pgj_drop_job_schedule: job "Job" does not recur on schedule "Spare"`},
		{"drop unknown job", "SELECT pgj_drop_job('Nope')", "42704",
			`pgj_drop_job: argument 1: job "Nope" does not exist`},
		{"drop NULL job", "SELECT pgj_drop_job(NULL)", "22004",
			"pgj_drop_job: argument 1 (job name) must not be NULL"},
	}
	before := apiState(t, conn)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := conn.Exec(ctx, tt.sql)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				t.Fatalf("%s: got %v, want SQLSTATE %s", tt.sql, err, tt.code)
			}
			if pgErr.Code != tt.code || pgErr.Message != tt.message {
				t.Fatalf("%s:\n got %s %q\nwant %s %q", tt.sql, pgErr.Code, pgErr.Message, tt.code, tt.message)
			}
			if after := apiState(t, conn); after != before {
				t.Fatalf("%s changed the state:\n%s\nbefore:\n%s", tt.sql, after, before)
			}
		})
	}
}

// apiState renders everything the API can change, to show that a failed call wrote nothing.
func apiState(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var state string
	err := conn.QueryRow(context.Background(), `SELECT
		(SELECT coalesce(string_agg(format('%s=%s', name, schedule), ';' ORDER BY name), '') FROM pgj_schedules) || ' / ' ||
		(SELECT coalesce(string_agg(format('%s=%s:%s:%s', name, function, start_schedule, schedules), ';' ORDER BY name), '') FROM pgj_jobs) || ' / ' ||
		(SELECT count(*) FROM pg_prepared_statements)::text`).Scan(&state)
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// TestRolesSeeOnlyTheirOwn: alice cannot see, change or drop bob's objects, and the errors she
// gets are those of objects that do not exist; names are unique in the database; a superuser sees all.
func TestRolesSeeOnlyTheirOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, admin := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	aliceConn, bobConn := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	mustExec(t, bobConn, `SELECT pgj_create_schedule('BobDaily', 'D 6:30'), pgj_create_job('BobJob', 'off_line()', null, 'BobDaily')`)
	mustExec(t, aliceConn, `SELECT pgj_create_schedule('AliceDaily', 'D 7:30'), pgj_create_job('AliceJob', 'end_of_day()', null, 'AliceDaily')`)

	visible := func(conn *pgx.Conn) string {
		var s string
		if err := conn.QueryRow(ctx, `SELECT coalesce((SELECT string_agg(name || '@' || owner, ',' ORDER BY name) FROM pgj_jobs), '') || ' ' ||
			coalesce((SELECT string_agg(name, ',' ORDER BY name) FROM pgj_schedules), '')`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got, want := visible(aliceConn), "AliceJob@"+alice+" AliceDaily"; got != want {
		t.Errorf("alice sees %q, want %q", got, want)
	}
	if got, want := visible(bobConn), "BobJob@"+bob+" BobDaily"; got != want {
		t.Errorf("bob sees %q, want %q", got, want)
	}
	if got, want := visible(admin), "AliceJob@"+alice+",BobJob@"+bob+" AliceDaily,BobDaily"; got != want {
		t.Errorf("the superuser sees %q, want %q", got, want)
	}

	for _, tt := range []struct{ sql, code, message string }{
		{"SELECT pgj_drop_job('BobJob')", "42704", `pgj_drop_job: argument 1: job "BobJob" does not exist`},
		{"SELECT pgj_update_job('BobJob', 'Mine', null, null)", "42704", `pgj_update_job: argument 1: job "BobJob" does not exist`},
		{"SELECT pgj_update_schedule('BobDaily', 'D 1:00')", "42704", `pgj_update_schedule: argument 1: schedule "BobDaily" does not exist`},
		{"SELECT pgj_drop_schedule('BobDaily', true)", "42704", `pgj_drop_schedule: argument 1: schedule "BobDaily" does not exist`},
		{"SELECT pgj_add_job_schedule('AliceJob', 'BobDaily')", "42704", `pgj_add_job_schedule: argument 2: schedule "BobDaily" does not exist`},
		{"SELECT pgj_add_job_schedule('BobJob', 'AliceDaily')", "42704", `pgj_add_job_schedule: argument 1: job "BobJob" does not exist`},
		{"SELECT pgj_create_job('X', 'off_line()', 'BobDaily', null)", "42704", `pgj_create_job: argument 3: schedule "BobDaily" does not exist`},
		{"SELECT pgj_create_schedule('BobDaily', 'D 1:00')", "42710", `pgj_create_schedule: argument 1: schedule name "BobDaily" is already taken`},
		{"SELECT * FROM pgjobs.pgj_job_", "42501", "permission denied for table pgj_job_"},
		{"SELECT * FROM pgjobs.pgj_run_", "42501", "permission denied for table pgj_run_"},
	} {
		_, err := aliceConn.Exec(ctx, tt.sql)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tt.code || pgErr.Message != tt.message {
			t.Errorf("alice: %s: got %v, want %s %q", tt.sql, err, tt.code, tt.message)
		}
	}
	if got := visible(bobConn); got != "BobJob@"+bob+" BobDaily" {
		t.Errorf("after alice's attempts bob sees %q", got)
	}
	// pgj_drop_unused_schedules drops only the caller's own.
	mustExec(t, bobConn, "SELECT pgj_create_schedule('BobUnused', 'D 1:00')")
	var dropped int
	if err := aliceConn.QueryRow(ctx, "SELECT pgj_drop_unused_schedules()").Scan(&dropped); err != nil || dropped != 0 {
		t.Errorf("alice's pgj_drop_unused_schedules() = %d, %v", dropped, err)
	}
	// SET ROLE: a superuser acting as alice creates alice's objects.
	mustExec(t, admin, "SET ROLE "+alice)
	mustExec(t, admin, "SELECT pgj_create_schedule('AliceByAdmin', 'D 2:00')")
	mustExec(t, admin, "RESET ROLE")
	var owner string
	if err := aliceConn.QueryRow(ctx, "SELECT owner FROM pgj_schedules WHERE name = 'AliceByAdmin'").Scan(&owner); err != nil || owner != alice {
		t.Errorf("schedule created under SET ROLE %s is owned by %q, %v", alice, owner, err)
	}
}

// TestNotifiesOncePerTransaction: changes that affect firing notify channel pgjobs once per
// transaction; the agent's own bookkeeping does not.
func TestNotifiesOncePerTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, conn := apiDatabase(t)
	listener := cluster.Connect(t, db)
	mustExec(t, listener, "LISTEN pgjobs")
	notifications := func() int {
		n := 0
		for {
			waitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
			_, err := listener.WaitForNotification(waitCtx)
			cancel()
			if err != nil {
				return n
			}
			n++
		}
	}
	mustExec(t, conn, `BEGIN;
		SELECT pgj_create_schedule('A', 'D 1:00'), pgj_create_schedule('B', 'D 2:00');
		SELECT pgj_create_job('J', 'off_line()', null, 'A'), pgj_add_job_schedule('J', 'B');
		COMMIT`)
	if n := notifications(); n != 1 {
		t.Fatalf("one transaction of six changes sent %d notifications, want 1", n)
	}
	mustExec(t, conn, "SELECT pgj_update_schedule('A', 'D 3:00')")
	if n := notifications(); n != 1 {
		t.Fatalf("an update sent %d notifications, want 1", n)
	}
	mustExec(t, conn, `INSERT INTO pgjobs.pgj_fire_ (firejobid, firenext, firelast, firelastrun, firelaststatus)
		SELECT jobid, now(), now(), now(), 'ok' FROM pgjobs.pgj_job_;
		INSERT INTO pgjobs.pgj_run_ (runjobname, runowner, runownerid, runstatus) VALUES ('J', 'postgres', 10, 'ok')`)
	if n := notifications(); n != 0 {
		t.Fatalf("the agent's bookkeeping sent %d notifications, want 0", n)
	}
	mustExec(t, conn, "BEGIN; SELECT pgj_create_schedule('C', 'D 4:00'); ROLLBACK")
	if n := notifications(); n != 0 {
		t.Fatalf("a rolled back change sent %d notifications, want 0", n)
	}
}
