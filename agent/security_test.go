package agent_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// The attacks of the security model (docs/security.md), each made by an ordinary LOGIN role.

// fireAt makes the agent fire the minute at and waits for n finished runs in all.
func fireAt(t *testing.T, db testDB, clock *fakeclock.Clock, at time.Time, n int) []string {
	t.Helper()
	mustSleepUntil(t, clock, at)
	clock.Set(at)
	return db.waitRuns(t, n)
}

func calls(t *testing.T, db testDB) string {
	t.Helper()
	var got string
	if err := db.conn.QueryRow(context.Background(), "SELECT coalesce(string_agg(job, ',' ORDER BY at), '') FROM calls").Scan(&got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestDefinerFunctionCannotMakeAJobOfItsCaller: alice's SECURITY DEFINER function, called once by a
// superuser, creates a job: the job is alice's and runs as alice, not as the superuser.
func TestDefinerFunctionCannotMakeAJobOfItsCaller(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	db.exec(t, `CREATE FUNCTION whoami() RETURNS void LANGUAGE sql AS $$ INSERT INTO calls (job) VALUES (session_user || '/' || current_user) $$`)
	db.exec(t, "CREATE SCHEMA reports AUTHORIZATION "+pgx.Identifier{alice}.Sanitize())
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	if _, err := aliceConn.Exec(context.Background(), `CREATE FUNCTION reports.report() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
		BEGIN
			PERFORM pgjobs.pgj_create_startup_job('Trap', 'whoami()');
		END $$`); err != nil {
		t.Fatal(err)
	}
	db.exec(t, "SELECT reports.report()") // the superuser runs alice's report once
	var owner string
	if err := db.conn.QueryRow(context.Background(), "SELECT owner FROM pgj_jobs WHERE name = 'Trap'").Scan(&owner); err != nil || owner != alice {
		t.Fatalf("owner of the job made by alice's function called by a superuser = %q, %v; want %s", owner, err, alice)
	}
	startAgent(t, fakeclock.New(t0), db)
	db.waitRuns(t, 1)
	if got := calls(t, db); got != alice+"/"+alice {
		t.Fatalf("the job ran as %q, want %s/%s", got, alice, alice)
	}
}

// TestOneRolesOpenTransactionBlocksNoFire: alice renames her job, and drops another, in
// transactions she leaves open; bob's job and hers still fire at the minute and are recorded.
func TestOneRolesOpenTransactionBlocksNoFire(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	bob := cluster.NewRole(t, "bob", db.name)
	ctx := context.Background()
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	if _, err := aliceConn.Exec(ctx, `SELECT pgj_create_schedule('AliceAt01', 'D 01'), pgj_create_job('AliceJob', 'note(''alice'')', null, 'AliceAt01'),
		pgj_create_job('AliceOther', 'note(''other'')', null, 'AliceAt01')`); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ConnectAs(t, db.name, bob).Exec(ctx, `SELECT pgj_create_schedule('BobAt01', 'D 01'), pgj_create_job('BobJob', 'note(''bob'')', null, 'BobAt01')`); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	renaming, err := aliceConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer renaming.Rollback(ctx)
	if _, err := renaming.Exec(ctx, "SELECT pgj_update_job('AliceJob', 'AliceRenamed', null, null)"); err != nil {
		t.Fatal(err)
	}
	dropping, err := cluster.ConnectAs(t, db.name, alice).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer dropping.Rollback(ctx)
	if _, err := dropping.Exec(ctx, "SELECT pgj_drop_job('AliceOther')"); err != nil {
		t.Fatal(err)
	}
	got := fireAt(t, db, clock, t0.Add(time.Minute), 3)
	if want := "AliceJob ok 10:01;AliceOther ok 10:01;BobJob ok 10:01"; strings.Join(slices.Sorted(slices.Values(got)), ";") != want {
		t.Fatalf("runs while alice's transactions are open = %v, want %s", got, want)
	}
}

// TestJobThatDropsItselfIsRecorded: a job that drops itself while it runs gets its run recorded,
// and the agent goes on firing.
func TestJobThatDropsItselfIsRecorded(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	db.exec(t, `CREATE FUNCTION drop_me() RETURNS void LANGUAGE plpgsql AS $$
		BEGIN PERFORM pgjobs.pgj_drop_job('Self'); PERFORM pg_sleep(0.4); INSERT INTO calls (job) VALUES ('Self'); END $$`)
	if _, err := cluster.ConnectAs(t, db.name, alice).Exec(context.Background(), `SELECT pgj_create_schedule('At01', 'D 01'),
		pgj_create_schedule('At02', 'D 02'), pgj_create_job('Self', 'drop_me()', null, 'At01'), pgj_create_job('Later', 'note(''Later'')', null, 'At02')`); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	fireAt(t, db, clock, t0.Add(time.Minute), 1)
	got := fireAt(t, db, clock, t0.Add(2*time.Minute), 2)
	if want := "Self ok 10:01;Later ok 10:02"; strings.Join(got, ";") != want {
		t.Fatalf("runs = %v, want %s", got, want)
	}
}

// TestNotificationFloodIsCoalesced: alice sends notifications on the agent's channel for three
// seconds, as fast as she can; the agent reloads its jobs about once a second, not once each, and
// still fires on time.
func TestNotificationFloodIsCoalesced(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	db.exec(t, "SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'At01')")
	clock := fakeclock.New(t0)
	var reloadsMu sync.Mutex
	var reloads []time.Time
	startAgentWith(t, clock, func(o *agent.Options) {
		o.OnReload = func(int) {
			reloadsMu.Lock()
			reloads = append(reloads, time.Now())
			reloadsMu.Unlock()
		}
	}, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	started := time.Now()
	sent := 0
	for time.Since(started) < 3*time.Second {
		if _, err := aliceConn.Exec(context.Background(), "SELECT pg_notify('pgjobs', n::text) FROM generate_series(1, 10000) n"); err != nil {
			t.Fatal(err)
		}
		sent += 10000
	}
	got := fireAt(t, db, clock, t0.Add(time.Minute), 1)
	if strings.Join(got, ";") != "Tick ok 10:01" {
		t.Fatalf("runs = %v", got)
	}
	elapsed := time.Since(started)
	reloadsMu.Lock()
	at := slices.Clone(reloads)
	reloadsMu.Unlock()
	n := len(at)
	// About one a second while they keep coming, and they are delivered for a while after alice
	// stops sending: not one per notification.
	if n < 2 || n > 10 {
		t.Fatalf("%d notifications in %s made %d reloads, want 2 to 10", sent, elapsed.Round(time.Millisecond), n)
	}
	// Never two within a second (less the time a load may take): a reload due later was run
	// again right after one a notification had started (the README-only attack saw them 6 ms apart).
	for i := 1; i < n; i++ {
		if gap := at[i].Sub(at[i-1]); gap < 900*time.Millisecond {
			t.Errorf("reloads %d and %d came %s apart, want about a second at least", i, i+1, gap.Round(time.Millisecond))
		}
	}
	t.Logf("%d notifications in %s: %d reloads", sent, elapsed.Round(time.Millisecond), n)
}

// TestSmuggledStatementNeverRuns: calls holding a second statement, stored as schema version 1
// stored them (its validator let them through; no view: unbound, the agent sends their text),
// never run their second statement: the agent sends each call over the extended protocol, where it
// is a syntax error. A COPY FROM STDIN fails at once instead of hanging.
func TestSmuggledStatementNeverRuns(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	if _, err := cluster.ConnectAs(t, db.name, alice).Exec(context.Background(), `SELECT pgj_create_schedule('At01', 'D 01'),
		pgj_create_job('E', 'note(''E'')', null, 'At01'), pgj_create_job('Copy', 'note(''Copy'')', null, 'At01')`); err != nil {
		t.Fatal(err)
	}
	db.exec(t, `UPDATE pgjobs.pgj_job_ SET jobfunction = 'public.note(E''\'''');SELECT public.note(''evil'');--'')', jobview = NULL WHERE jobname = 'E'`)
	db.exec(t, `UPDATE pgjobs.pgj_job_ SET jobfunction = 'public.note(''c''); COPY calls FROM STDIN', jobview = NULL WHERE jobname = 'Copy'`)
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	got := fireAt(t, db, clock, t0.Add(time.Minute), 2)
	if want := "Copy error 10:01 42601;E error 10:01 42601"; strings.Join(slices.Sorted(slices.Values(got)), ";") != want {
		t.Fatalf("runs = %v, want %s", got, want)
	}
	if c := calls(t, db); c != "" {
		t.Fatalf("calls made: %q, want none", c)
	}
}

// TestJobsOutliveNoRole: a job runs nothing once its owner is dropped (even when a new role takes
// the name), has lost LOGIN or has expired, also on a session the agent has open already; a
// renamed owner's job runs on under the new name.
func TestJobsOutliveNoRole(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	ctx := context.Background()
	carol := cluster.NewRole(t, "carol", db.name)
	dave := cluster.NewRole(t, "dave", db.name)
	erin := cluster.NewRole(t, "erin", db.name)
	frank := cluster.NewRole(t, "frank", db.name)
	for _, role := range []string{carol, dave, erin, frank} {
		if _, err := cluster.ConnectAs(t, db.name, role).Exec(ctx, fmt.Sprintf(`SELECT pgj_create_schedule('%[1]s', 'D 01'),
			pgj_create_schedule('%[1]s2', 'D 02'), pgj_create_schedule('%[1]s3', 'D 03'),
			pgj_create_job('%[1]s', 'note(''%[1]s'')', null, '%[1]s'),
			pgj_add_job_schedule('%[1]s', '%[1]s2'), pgj_add_job_schedule('%[1]s', '%[1]s3')`, role)); err != nil {
			t.Fatal(err)
		}
	}
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	fireAt(t, db, clock, t0.Add(time.Minute), 4) // each runs once and leaves a session open
	db.exec(t, fmt.Sprintf(`DROP OWNED BY %[1]s; DROP ROLE %[1]s; CREATE ROLE %[1]s LOGIN; ALTER ROLE %[2]s NOLOGIN; ALTER ROLE %[3]s VALID UNTIL '2001-01-01';
		ALTER ROLE %[4]s RENAME TO %[5]s`,
		pgx.Identifier{carol}.Sanitize(), pgx.Identifier{dave}.Sanitize(), pgx.Identifier{erin}.Sanitize(),
		pgx.Identifier{frank}.Sanitize(), pgx.Identifier{frank + "_renamed"}.Sanitize()))
	t.Cleanup(func() {
		db.exec(t, fmt.Sprintf("ALTER ROLE %s LOGIN; ALTER ROLE %s RENAME TO %s", pgx.Identifier{dave}.Sanitize(),
			pgx.Identifier{frank + "_renamed"}.Sanitize(), pgx.Identifier{frank}.Sanitize()))
	})
	fireAt(t, db, clock, t0.Add(2*time.Minute), 8)
	rows, _ := db.conn.Query(ctx, `SELECT runjobname || ' ' || runstatus || ' ' || coalesce(runmessage, '') FROM pgjobs.pgj_run_
		WHERE runscheduled = $1 ORDER BY runjobname`, t0.Add(2*time.Minute))
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	// dave's run is refused by the guard on an open session, or at connect when the run needs a
	// new one; both say why.
	want := [][]string{
		{carol + " error the job's owner " + carol + " (role OID "},
		{dave + " error the job's owner " + dave + " may no longer log in: the job does not run", dave + " error the job's owner " + dave + " may no longer log in ("},
		{erin + " error the job's owner " + erin + " expired at "},
		{frank + " ok "},
	}
	for i := range want {
		if i >= len(got) || !slices.ContainsFunc(want[i], func(p string) bool { return strings.HasPrefix(got[i], p) }) {
			t.Fatalf("runs at 10:02 = %q, want prefixes %q", got, want)
		}
	}
	if c := calls(t, db); strings.Count(c, ",") != 4 || !strings.HasSuffix(c, ","+frank) {
		t.Fatalf("calls = %q, want the four of 10:01 and %s's of 10:02", c, frank)
	}
	// Each refusal names its fix in pgj_runs.hint; following it, as a superuser, lets the job run
	// (dave, erin) or drops it (carol's, whose role is gone).
	rows, _ = db.conn.Query(ctx, `SELECT hint FROM pgj_runs WHERE scheduled = $1 AND status = 'error' ORDER BY job`, t0.Add(2*time.Minute))
	hints, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(hints) != 3 {
		t.Fatalf("hints of the refused runs: %q, %v", hints, err)
	}
	for _, hint := range hints {
		fix, ok := strings.CutSuffix(hint, " lets it run again")
		if !ok {
			_, fix, ok = strings.Cut(hint, "may drop the job: ")
		}
		if !ok {
			t.Fatalf("hint %q names no statement", hint)
		}
		db.exec(t, fix)
	}
	fireAt(t, db, clock, t0.Add(3*time.Minute), 11)
	rows, _ = db.conn.Query(ctx, `SELECT job || ' ' || status FROM pgj_runs WHERE scheduled = $1 ORDER BY job`, t0.Add(3*time.Minute))
	got, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if want := []string{dave + " ok", erin + " ok", frank + " ok"}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("runs at 10:03 after following the hints = %q (%v), want %q", got, err, want)
	}
}

// TestUnqualifiedCallCannotBeHijacked: a superuser's job note('x') runs public.note even after
// alice creates a note(text) in a schema that comes first in the search path the job runs with.
func TestUnqualifiedCallCannotBeHijacked(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	db.exec(t, "SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Mine', 'note(''x'')', null, 'At01')")
	var stored string
	if err := db.conn.QueryRow(context.Background(), "SELECT function FROM pgj_jobs WHERE name = 'Mine'").Scan(&stored); err != nil || stored != "public.note('x'::text)" {
		t.Fatalf("stored call = %q, %v; want public.note('x'::text)", stored, err)
	}
	db.exec(t, fmt.Sprintf(`CREATE SCHEMA early AUTHORIZATION %s; ALTER DATABASE %s SET search_path = early, public, pgjobs`,
		pgx.Identifier{alice}.Sanitize(), pgx.Identifier{db.name}.Sanitize()))
	if _, err := cluster.ConnectAs(t, db.name, alice).Exec(context.Background(),
		`CREATE FUNCTION early.note(job text) RETURNS void LANGUAGE sql AS $$ INSERT INTO public.calls (job) VALUES ('hijacked') $$`); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	fireAt(t, db, clock, t0.Add(time.Minute), 1)
	if c := calls(t, db); c != "x" {
		t.Fatalf("calls = %q, want x (public.note)", c)
	}
}

// TestHugeResultsAndErrorsAreBounded: a job's value stays in the server, and a job's error is
// recorded and logged cut to 4 KB.
func TestHugeResultsAndErrorsAreBounded(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	db.exec(t, `CREATE FUNCTION big() RETURNS text LANGUAGE sql AS $$ SELECT repeat('x', 20000000) $$;
		CREATE FUNCTION shout() RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '%', repeat('é', 50000); END $$`)
	if _, err := cluster.ConnectAs(t, db.name, alice).Exec(context.Background(), `SELECT pgj_create_schedule('At01', 'D 01'),
		pgj_create_job('Big', 'big()', null, 'At01'), pgj_create_job('Shout', 'shout()', null, 'At01')`); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	if got := fireAt(t, db, clock, t0.Add(time.Minute), 2); strings.Join(slices.Sorted(slices.Values(got)), ";") != "Big ok 10:01;Shout error 10:01 P0001" {
		t.Fatalf("runs = %v", got)
	}
	var length int
	var message string
	if err := db.conn.QueryRow(context.Background(), "SELECT octet_length(runmessage), runmessage FROM pgjobs.pgj_run_ WHERE runjobname = 'Shout'").Scan(&length, &message); err != nil {
		t.Fatal(err)
	}
	if length > 4200 || !strings.HasSuffix(message, "... (100000 bytes in all)") {
		t.Fatalf("recorded message of %d bytes ending %q", length, message[max(0, len(message)-40):])
	}
}
