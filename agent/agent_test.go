package agent_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

var cluster *pgtest.Cluster

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &cluster)) }

func TestStartupJobRunsOnceAtStart(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_startup_job('Warm', 'note(''Warm'')')")
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Warm ok startup" {
		t.Fatalf("runs = %v", got)
	}
}

func TestFiresOnScheduleAndRecordsTheNextPlan(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `SELECT pgj_create_schedule('Every5', 'I 0:05'), pgj_create_schedule('At07', 'D 07'),
		pgj_create_job('Five', 'note(''Five'')', null, 'Every5'), pgj_create_job('Hourly', 'note(''Hourly'')', null, 'At07')`)
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(5*time.Minute))
	var next time.Time
	if err := db.conn.QueryRow(context.Background(), "SELECT next_run FROM pgj_jobs WHERE name = 'Hourly'").Scan(&next); err != nil || !next.Equal(t0.Add(7*time.Minute)) {
		t.Fatalf("planned run of Hourly = %v, %v; want 10:07", next, err)
	}
	clock.Set(t0.Add(5 * time.Minute))
	db.waitRuns(t, 1)
	mustSleepUntil(t, clock, t0.Add(7*time.Minute))
	clock.Set(t0.Add(7 * time.Minute))
	db.waitRuns(t, 2)
	mustSleepUntil(t, clock, t0.Add(10*time.Minute))
	clock.Set(t0.Add(10 * time.Minute))
	got := db.waitRuns(t, 3)
	if want := "Five ok 10:05;Hourly ok 10:07;Five ok 10:10"; strings.Join(got, ";") != want {
		t.Fatalf("runs = %v, want %s", got, want)
	}
	var calls int
	if err := db.conn.QueryRow(context.Background(), "SELECT count(*) FROM calls").Scan(&calls); err != nil || calls != 3 {
		t.Fatalf("calls = %d, %v", calls, err)
	}
}

func TestJobCreatedWhileSleepingFires(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	clock := fakeclock.New(t0)
	_, logs := startAgent(t, clock, db)
	if !logs.wait(t, 1, agent.EventIdle, 10*time.Second) {
		t.Fatal("the agent never slept")
	}
	db.exec(t, "SELECT pgj_create_schedule('At03', 'D 03'), pgj_create_job('Late', 'note(''Late'')', null, 'At03')")
	mustSleepUntil(t, clock, t0.Add(3*time.Minute))
	clock.Set(t0.Add(3 * time.Minute))
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Late ok 10:03" {
		t.Fatalf("runs = %v", got)
	}
}

func TestFailuresAreRecordedWithSQLState(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Broken', 'fail()', null, 'At01')")
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Broken error 10:01 P0042" {
		t.Fatalf("runs = %v", got)
	}
	// pgj_runs keeps what PostgreSQL reported, and the run's duration.
	var sqlstate, message, detail, hint, where, status string
	var duration time.Duration
	if err := db.conn.QueryRow(context.Background(), `SELECT sqlstate, message, detail, hint, context, duration,
		(SELECT last_status FROM pgj_jobs) FROM pgj_runs`).Scan(&sqlstate, &message, &detail, &hint, &where, &duration, &status); err != nil {
		t.Fatal(err)
	}
	got := []string{sqlstate, message, detail, hint, where, status}
	want := []string{"P0042", "failing on purpose", "the detail", "the hint", "PL/pgSQL function fail() line 1 at RAISE", "error"}
	if !slices.Equal(got, want) || duration < 0 {
		t.Fatalf("run = %q, duration %s; want %q, a duration", got, duration, want)
	}
}

func TestOverlappingFireIsSkipped(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_schedule('Every1', 'I 0:01'), pgj_create_job('Slow', 'slow(''Slow'', 1.5)', null, 'Every1')")
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	mustSleepUntil(t, clock, t0.Add(2*time.Minute))
	clock.Set(t0.Add(2 * time.Minute)) // the first run sleeps 1.5 s: still going
	got := db.waitRuns(t, 2)
	if want := "Slow skipped 10:02;Slow ok 10:01"; strings.Join(got[len(got)-2:], ";") != want && strings.Join(got, ";") != "Slow running 10:01;Slow skipped 10:02" {
		sorted := strings.Join(got, ";")
		if !strings.Contains(sorted, "Slow skipped 10:02") || !strings.Contains(sorted, "Slow ok 10:01") {
			t.Fatalf("runs = %v, want an ok run at 10:01 and a skipped one at 10:02", got)
		}
	}
}

// TestJobsRunWithTheirOwnersPrivileges: alice's job cannot do what alice cannot, RESET ROLE or not.
func TestJobsRunWithTheirOwnersPrivileges(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	db.exec(t, `CREATE TABLE secret (n int); INSERT INTO secret VALUES (1);
		CREATE FUNCTION steal() RETURNS void LANGUAGE plpgsql AS $$
		BEGIN RESET ROLE; RESET SESSION AUTHORIZATION; DELETE FROM secret; END $$;
		CREATE FUNCTION whoami() RETURNS void LANGUAGE sql AS $$ INSERT INTO calls (job) VALUES (session_user || '/' || current_user) $$`)
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	if _, err := aliceConn.Exec(context.Background(), `SELECT pgj_create_schedule('At01', 'D 01'),
		pgj_create_job('Steal', 'steal()', null, 'At01'), pgj_create_job('Who', 'whoami()', null, 'At01')`); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	got := strings.Join(db.waitRuns(t, 2), ";")
	if !strings.Contains(got, "Steal error 10:01 42501") || !strings.Contains(got, "Who ok 10:01") {
		t.Fatalf("runs = %s", got)
	}
	var secrets int
	var who string
	if err := db.conn.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM secret), (SELECT job FROM calls)").Scan(&secrets, &who); err != nil {
		t.Fatal(err)
	}
	if secrets != 1 || who != alice+"/"+alice {
		t.Fatalf("secret rows %d (want 1), job ran as %q (want %s/%s)", secrets, who, alice, alice)
	}
}

// TestTwoAgentsFireEachRunOnce: two agents on one database; only the active one fires; when it
// stops, the other takes over.
func TestTwoAgentsFireEachRunOnce(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_schedule('Every1', 'I 0:01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'Every1')")
	clock := fakeclock.New(t0)
	first, _ := startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	startAgent(t, clock, db)
	for i := 1; i <= 10; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		mustSleepUntil(t, clock, at)
		clock.Set(at)
		db.waitRuns(t, i)
		if i == 5 {
			first.Stop(5 * time.Second) // the second takes over
		}
	}
	rows, _ := db.conn.Query(context.Background(), `SELECT to_char(runscheduled AT TIME ZONE 'UTC', 'HH24:MI') || ' x' || count(*)
		FROM pgjobs.pgj_run_ WHERE runstatus = 'ok' GROUP BY runscheduled HAVING count(*) > 1`)
	twice, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(twice) > 0 {
		t.Fatalf("fires run more than once: %v %v", twice, err)
	}
	var agents int
	if err := db.conn.QueryRow(context.Background(), "SELECT count(DISTINCT runagent) FROM pgjobs.pgj_run_").Scan(&agents); err != nil || agents != 2 {
		t.Fatalf("runs by %d agents, want 2 (before and after the takeover): %v", agents, err)
	}
}

func TestSoftStopWaitsForRunsAndCancelsAfterGrace(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `SELECT pgj_create_startup_job('Short', 'slow(''Short'', 0.5)'), pgj_create_startup_job('Long', 'slow(''Long'', 60)')`)
	m, _ := startAgent(t, agent.RealClock{}, db)
	// On timeout, stop anyway: the runs checked after the stop tell whether it went right.
	eventually(t, 10*time.Second, "both runs to be running", func() bool {
		var running int
		if err := db.conn.QueryRow(context.Background(), "SELECT count(*) FROM pgjobs.pgj_run_ WHERE runstatus = 'running'").Scan(&running); err != nil {
			t.Fatal(err)
		}
		return running == 2
	})
	start := time.Now()
	m.Stop(2 * time.Second)
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Stop took %s", took)
	}
	got := strings.Join(db.runs(t), ";")
	if !strings.Contains(got, "Short ok startup") || !strings.Contains(got, "Long cancelled startup") {
		t.Fatalf("runs after the stop: %s", got)
	}
}

// TestDatabaseOutage: the server stops while a job is due; the agent retries, recovers, records
// the missed fire once and goes on; nothing panics or exits.
func TestDatabaseOutage(t *testing.T) {
	if !cluster.Own() {
		t.Skip("the server of " + pgtest.DSNVariable + " cannot be stopped")
	}
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_schedule('Every1', 'I 0:01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'Every1')")
	clock := fakeclock.New(t0)
	_, logs := startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	db.waitRuns(t, 1)
	mustSleepUntil(t, clock, t0.Add(2*time.Minute))

	ctx := context.Background()
	if err := cluster.StopServer(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(4*time.Minute + 30*time.Second)) // 10:02, 10:03 and 10:04 pass with no database
	time.Sleep(300 * time.Millisecond)
	if err := cluster.StartServer(ctx); err != nil {
		t.Fatal(err)
	}
	if !eventually(t, 20*time.Second, "the agent to recover", func() bool {
		if logs.count(1, agent.EventReachable) > 0 {
			return true
		}
		// The retry pauses run on the agent's clock. 400 ms per 20 ms poll keeps it at 20 s a
		// second, so a slow recovery runs into the fire of 10:05 no sooner than at 1 s per 50 ms.
		clock.Advance(400 * time.Millisecond)
		return false
	}) {
		t.Fatalf("the agent did not recover:\n%s", logs.String())
	}
	db.conn = cluster.Connect(t, db.name)
	got := db.waitRuns(t, 2)
	if want := "Tick ok 10:01;Tick missed 10:04"; strings.Join(got, ";") != want {
		t.Fatalf("runs = %v, want %s", got, want)
	}
	if n := strings.Count(logs.String(), "database unavailable"); n != 1 {
		t.Errorf("the outage was logged %d times at the error level, want 1", n)
	}
	var message string
	if err := db.conn.QueryRow(ctx, "SELECT runmessage FROM pgjobs.pgj_run_ WHERE runstatus = 'missed'").Scan(&message); err != nil || !strings.HasPrefix(message, "3 fires from 2026-11-20T10:02:00Z to 2026-11-20T10:04:00Z were missed") {
		t.Fatalf("missed message %q, %v", message, err)
	}
}

func TestOldRunsArePruned(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `INSERT INTO pgjobs.pgj_run_ (runjobname, runowner, runownerid, runstatus, runstarted, runfinished)
		VALUES ('Old', 'postgres', 10, 'ok', now() - interval '40 days', now() - interval '40 days'),
		       ('Recent', 'postgres', 10, 'ok', now() - interval '1 day', now() - interval '1 day')`)
	db.exec(t, "UPDATE pgjobs.pgj_setting_ SET value = '30 days' WHERE name = 'run_retention'")
	db.exec(t, "SELECT pgj_create_startup_job('Warm', 'note(''Warm'')')")
	startAgent(t, fakeclock.New(t0), db)
	// On timeout, go on: the check below fails with the runs.
	eventually(t, 15*time.Second, "the startup run", func() bool { return strings.Contains(strings.Join(db.runs(t), ";"), "Warm ok") })
	if got := strings.Join(db.runs(t), ";"); got != "Recent ok startup;Warm ok startup" {
		t.Fatalf("runs after pruning: %s", got)
	}
}

// TestOneDatabaseDownLeavesTheOtherAlone: a database that refuses connections does not stop the
// other's fires; when it is back, its agent recovers and records the missed fires.
func TestOneDatabaseDownLeavesTheOtherAlone(t *testing.T) {
	t.Parallel()
	down, up := newTestDB(t), newTestDB(t)
	for _, db := range []testDB{down, up} {
		db.exec(t, "SELECT pgj_create_schedule('Every1', 'I 0:01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'Every1')")
	}
	clock := fakeclock.New(t0)
	_, logs := startAgent(t, clock, down, up)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	for _, db := range []testDB{down, up} { // both agents have planned: they know what they will miss
		if !eventually(t, 10*time.Second, "the job to be planned", func() bool {
			var planned bool
			// The agent's own plan: pgj_jobs.next_run is computed from the schedules when no agent leads.
			if err := db.conn.QueryRow(context.Background(), "SELECT EXISTS (SELECT FROM pgjobs.pgj_fire_ WHERE firenext IS NOT NULL)").Scan(&planned); err != nil {
				t.Fatal(err)
			}
			return planned
		}) {
			t.Fatal("the agent never planned the job")
		}
	}
	admin := cluster.Connect(t, "postgres")
	ctx := context.Background()
	ident := pgx.Identifier{down.name}.Sanitize()
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident+" WITH ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", down.name); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		at := t0.Add(time.Duration(i) * time.Minute)
		mustSleepUntil(t, clock, at)
		clock.Set(at)
		up.waitRuns(t, i)
	}
	if _, err := admin.Exec(ctx, "ALTER DATABASE "+ident+" WITH ALLOW_CONNECTIONS true"); err != nil {
		t.Fatal(err)
	}
	if !eventually(t, 20*time.Second, "the agent of the database that was down to recover", func() bool {
		if logs.count(1, agent.EventReachable) > 0 {
			return true
		}
		clock.Advance(40 * time.Millisecond) // 40 ms every 20 ms poll: the clock goes at 2 s per second
		return false
	}) {
		t.Fatalf("the agent of the database that was down did not recover")
	}
	down.conn = cluster.Connect(t, down.name)
	got := strings.Join(down.waitRuns(t, 1), ";")
	if !strings.HasPrefix(got, "Tick missed 10:0") {
		t.Fatalf("runs of the database that was down: %s", got)
	}
	if got := strings.Join(up.runs(t), ";"); !strings.HasPrefix(got, "Tick ok 10:01;Tick ok 10:02;Tick ok 10:03") {
		t.Fatalf("runs of the database that stayed up: %s", got)
	}
}

// TestLeaderSessionLostDuringARun: the leader session ends while a run goes on; the run is the
// agent's still, on its own session, and ends recorded as ok, not abandoned.
func TestLeaderSessionLostDuringARun(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_startup_job('Long', 'slow(''Long'', 1.5)')")
	startAgent(t, fakeclock.New(t0), db)
	if !eventually(t, 10*time.Second, "the run to show as running", func() bool { return strings.Contains(strings.Join(db.runs(t), ";"), "Long running") }) {
		t.Fatal("the run never showed as running")
	}
	endLeaderSession(t, db)
	var got string
	if !eventually(t, 10*time.Second, "the run to end ok", func() bool {
		got = strings.Join(db.runs(t), ";")
		return got == "Long ok startup"
	}) {
		t.Fatalf("runs = %s, want Long ok startup", got)
	}
}

// A run waiting for a session when the leader session is lost waits on: the term's end is no stop
// of the agent, and the run starts once a session is free.
func TestWaitingRunOutlivesItsTerm(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_startup_job('A', 'slow(''A'', 1.5)'), pgj_create_startup_job('B', 'slow(''B'', 1.5)')")
	// 4 sessions: the leader's and two for the history leave one for runs.
	_, logs := startAgentWith(t, fakeclock.New(t0), func(o *agent.Options) { o.Sessions = 4 }, db)
	if !eventually(t, 10*time.Second, "one run to go on and the other to wait", func() bool {
		return strings.Contains(strings.Join(db.runs(t), ";"), " running") && strings.Contains(logs.String(), "waiting for a session")
	}) {
		t.Fatalf("runs = %v", db.runs(t))
	}
	endLeaderSession(t, db)
	got := db.waitRuns(t, 2)
	slices.Sort(got)
	if strings.Join(got, ";") != "A ok startup;B ok startup" {
		t.Fatalf("runs = %v, want both ok: the waiting run gave up when the term ended", got)
	}
}

// TestNewJobIsPlannedFromNow: a job created long after the agent's last wake fires at its next
// time from now, not at a time that passed before it existed.
func TestNewJobIsPlannedFromNow(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_schedule('At30', 'D 30'), pgj_create_job('Half', 'note(''Half'')', null, 'At30')")
	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(30*time.Minute))
	clock.Set(t0.Add(20 * time.Minute)) // 10:20: nothing due yet
	db.exec(t, "SELECT pgj_create_schedule('At15', 'D 15'), pgj_create_job('Quarter', 'note(''Quarter'')', null, 'At15')")
	var next *time.Time
	if !eventually(t, 10*time.Second, "Quarter to be planned", func() bool {
		if err := db.conn.QueryRow(context.Background(), "SELECT next_run FROM pgj_jobs WHERE name = 'Quarter'").Scan(&next); err != nil {
			t.Fatal(err)
		}
		return next != nil
	}) {
		t.Fatal("Quarter was never planned")
	}
	if want := t0.Add(75 * time.Minute); !next.Equal(want) {
		t.Fatalf("Quarter planned for %s, want %s", next.UTC().Format(time.TimeOnly), want.Format(time.TimeOnly))
	}
}

// TestClaimedFireWithoutRunIsMissed: a fire that an agent claimed ahead but that has no run row
// (the agent died before running it) is recorded as missed by the next agent, not lost.
func TestClaimedFireWithoutRunIsMissed(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_schedule('At58', 'D 58'), pgj_create_job('Late', 'note(''Late'')', null, 'At58')")
	db.exec(t, "INSERT INTO pgjobs.pgj_fire_ (firejobid, firelast, firenext) SELECT jobid, $1, $1 FROM pgjobs.pgj_job_", t0.Add(-2*time.Minute))
	startAgent(t, fakeclock.New(t0), db)
	got := strings.Join(db.waitRuns(t, 1), ";")
	if got != "Late missed 09:58" {
		t.Fatalf("runs = %s, want Late missed 09:58", got)
	}
}

// TestRefusedRunEndsAtTheNextFire: while the server refuses new sessions (other clients took its
// connection slots), a run waits and tries again; when the job's next fire comes first, the run is
// recorded as an error that names the refusal, and the next fire takes its place: it is not
// recorded as skipped behind a run that never began (found by the attacker review of issue 10).
func TestRefusedRunEndsAtTheNextFire(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	small, db, alice, other := smallServer(t, ctx)
	if _, err := small.ConnectAs(t, db.name, alice).Exec(ctx, "SELECT pgj_create_schedule('Each', 'D 01'), pgj_create_schedule('Each2', 'D 02'), pgj_create_job('Tick', 'note(''Tick'')', null, 'Each'), pgj_add_job_schedule('Tick', 'Each2')"); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	hogs := small.TakeEverySlot(t, db.name, other)
	_, logs := startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	if !logs.wait(t, 1, agent.EventRunRefused, 15*time.Second) {
		t.Fatal("the run's session was not refused")
	}
	mustSleepUntil(t, clock, t0.Add(2*time.Minute))
	clock.Set(t0.Add(2 * time.Minute))
	first := db.waitRuns(t, 1)
	if len(first) != 1 || first[0] != "Tick error 10:01 53300" {
		t.Fatalf("runs = %v, want the 10:01 run recorded as not started", first)
	}
	var message string
	if err := db.conn.QueryRow(ctx, "SELECT runmessage FROM pgjobs.pgj_run_ ORDER BY runid LIMIT 1").Scan(&message); err != nil || !strings.Contains(message, "the server refused new sessions") {
		t.Fatalf("message %q (%v): want the server's refusal, not the budget", message, err)
	}
	for _, c := range hogs {
		c.Close(ctx)
	}
	if got := strings.Join(db.waitRuns(t, 2), ";"); got != "Tick error 10:01 53300;Tick ok 10:02" {
		t.Fatalf("runs = %s", got)
	}
}
