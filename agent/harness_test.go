package agent_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
	"github.com/pgjobs/pgjobs/internal/pgtest"
	"github.com/pgjobs/pgjobs/internal/syncbuf"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// t0 is the fake clock's start in the tests: a Friday, 10:00 UTC.
var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

const jobFunctions = `
CREATE TABLE calls (job text, at timestamptz DEFAULT clock_timestamp());
GRANT ALL ON calls TO PUBLIC;
CREATE FUNCTION note(job text) RETURNS void LANGUAGE sql AS $$ INSERT INTO calls (job) VALUES (job) $$;
CREATE FUNCTION fail() RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'failing on purpose' USING ERRCODE = 'P0042', DETAIL = 'the detail', HINT = 'the hint'; END $$;
CREATE FUNCTION slow(job text, seconds float) RETURNS void LANGUAGE sql AS $$ SELECT pg_sleep(seconds); INSERT INTO calls (job) VALUES (job) $$;
`

// testDB is an enabled database with the test functions.
type testDB struct {
	name string
	conn *pgx.Conn       // superuser session for setting up and checking
	on   *pgtest.Cluster // the cluster, when not the tests' shared one
}

func newTestDB(t *testing.T) testDB { return newTestDBIn(t, cluster) }

// newTestDBIn is newTestDB on the cluster c.
func newTestDBIn(t *testing.T, c *pgtest.Cluster) testDB {
	t.Helper()
	name := c.NewDatabase(t)
	conn := c.Connect(t, name)
	if err := sqlschema.Install(context.Background(), conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(context.Background(), jobFunctions); err != nil {
		t.Fatal(err)
	}
	return testDB{name: name, conn: c.Connect(t, name), on: c} // a new session: the search_path now has pgjobs
}

func (d testDB) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := d.conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// unbind makes every job's call in d one stored before schema version 15: text, run after the
// guard of versions 8 and 9, with no view (the call schemas are dropped with their views).
func (d testDB) unbind(t *testing.T) {
	t.Helper()
	d.exec(t, `UPDATE pgjobs.pgj_job_ SET jobview = NULL;
		DO $$ DECLARE s text; BEGIN
			FOR s IN SELECT nspname FROM pg_namespace WHERE nspname ~ '^pgjobs_call_[0-9]+$' LOOP
				EXECUTE format('DROP SCHEMA %I CASCADE', s);
			END LOOP;
		END $$`)
}

// runs returns the run history as "job status scheduled" lines in run order.
func (d testDB) runs(t *testing.T) []string {
	t.Helper()
	rows, _ := d.conn.Query(context.Background(), `SELECT runjobname || ' ' || runstatus || ' ' ||
		coalesce(to_char(runscheduled AT TIME ZONE 'UTC', 'HH24:MI'), 'startup') ||
		coalesce(' ' || runsqlstate, '') FROM pgjobs.pgj_run_ ORDER BY runid`)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// waitRuns waits until the run history has n rows that are not running, and returns them.
func (d testDB) waitRuns(t *testing.T, n int) []string {
	t.Helper()
	if !eventually(t, 15*time.Second, fmt.Sprintf("%d finished runs", n), func() bool {
		var done int
		if err := d.conn.QueryRow(context.Background(), "SELECT count(*) FROM pgjobs.pgj_run_ WHERE runstatus <> 'running'").Scan(&done); err != nil {
			t.Fatal(err)
		}
		return done >= n
	}) {
		t.Fatalf("waited for %d finished runs; have %v", n, d.runs(t))
	}
	return d.runs(t)
}

// eventually polls cond every 20 ms until it holds, and reports whether it did before timeout.
// On timeout it logs what it waited for and returns false, leaving it to the caller to fail the
// test with the state it needs to show, or to go on.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Logf("gave up after %s waiting for %s", timeout, what)
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// agentOutput is what a test sees of an agent it started: its log and its events.
type agentOutput struct {
	syncbuf.Buffer
	*events
}

// events records the events of the database agents under test (Options.OnEvent), so that a test
// waits for one through the hook, not for log text.
type events struct {
	mu      sync.Mutex
	seen    map[dbEvent]int
	changed chan struct{} // closed and replaced at each event
}

type dbEvent struct {
	id int
	e  agent.Event
}

func newEvents() *events { return &events{seen: map[dbEvent]int{}, changed: make(chan struct{})} }

// record is the Options.OnEvent hook.
func (e *events) record(id int, ev agent.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.seen[dbEvent{id, ev}]++
	close(e.changed)
	e.changed = make(chan struct{})
}

// count returns how many times database agent id had event ev.
func (e *events) count(id int, ev agent.Event) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seen[dbEvent{id, ev}]
}

// wait waits for database agent id's event ev, for at most timeout, and reports whether it came.
func (e *events) wait(t *testing.T, id int, ev agent.Event, timeout time.Duration) bool {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		n, changed := e.seen[dbEvent{id, ev}], e.changed
		e.mu.Unlock()
		if n > 0 {
			return true
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Logf("gave up after %s waiting for database agent %d to be %s", timeout, id, ev)
			return false
		}
	}
}

// waitEither waits for event ev of database agent 1 of any of the agents whose events are given,
// for at most timeout, and reports whether it came.
func waitEither(t *testing.T, ev agent.Event, timeout time.Duration, agents ...*events) bool {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		done := make(chan struct{})
		changed := make(chan struct{}, len(agents))
		seen := false
		for _, e := range agents {
			e.mu.Lock()
			n, c := e.seen[dbEvent{1, ev}], e.changed
			e.mu.Unlock()
			seen = seen || n > 0
			go func() {
				select {
				case <-c:
					changed <- struct{}{}
				case <-done:
				}
			}()
		}
		if seen {
			close(done)
			return true
		}
		select {
		case <-changed:
			close(done)
		case <-deadline.C:
			close(done)
			t.Logf("gave up after %s waiting for an agent to be %s", timeout, ev)
			return false
		}
	}
}

// agentNumber names the test agents apart.
var agentNumber atomic.Int64

// startAgent runs a master agent on the databases with a fake clock at t0 and stops it when the
// test ends.
func startAgent(t *testing.T, clock agent.Clock, dbs ...testDB) (*agent.Master, *agentOutput) {
	t.Helper()
	return startAgentWith(t, clock, nil, dbs...)
}

// startAgentWith is startAgent with options changed by configure, when not nil.
func startAgentWith(t *testing.T, clock agent.Clock, configure func(*agent.Options), dbs ...testDB) (*agent.Master, *agentOutput) {
	t.Helper()
	logs := &agentOutput{events: newEvents()}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opt := agent.Options{
		Clock:    clock,
		Location: time.UTC,
		Start:    t0,
		Name:     fmt.Sprintf("test %s %d", t.Name(), agentNumber.Add(1)),
		RetryMin: 50 * time.Millisecond,
		RetryMax: 200 * time.Millisecond,
		Logger:   func(id, level int) *slog.Logger { return logger.With("db", id) },
		OnEvent:  logs.record,
	}
	if configure != nil {
		configure(&opt)
	}
	m := agent.NewMaster(opt, logger)
	var rows []agent.Database
	for i, d := range dbs {
		rows = append(rows, agent.Database{ID: i + 1, DSN: d.on.DSN(d.name), LogLevel: 5})
	}
	m.Apply(rows)
	t.Cleanup(func() {
		m.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("agent log:\n%s", logs.String())
		}
	})
	return m, logs
}

func mustSleepUntil(t *testing.T, clock *fakeclock.Clock, at time.Time) {
	t.Helper()
	if !clock.WaitForTimer(at, 15*time.Second) {
		t.Fatalf("the agent did not go to sleep until %s", at.Format(time.TimeOnly))
	}
}

// endLeaderSession ends the agent's own sessions on db (its leader session and its history
// sessions), not those of the runs.
func endLeaderSession(t *testing.T, db testDB) {
	t.Helper()
	var ended int
	if err := db.conn.QueryRow(context.Background(), "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'pgjobsagent 1'").Scan(&ended); err != nil || ended == 0 {
		t.Fatalf("ended %d of the agent's sessions: %v", ended, err)
	}
}

// smallServer starts a cluster of its own with max_connections 12 (9 for ordinary roles, the
// superuser sessions included), a pgjobs database and two ordinary roles on it; the test is skipped
// on an existing server, whose max_connections is its own.
func smallServer(t *testing.T, ctx context.Context) (small *pgtest.Cluster, db testDB, alice, other string) {
	t.Helper()
	small, err := pgtest.StartWith(ctx, pgtest.Settings{MaxConnections: 12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { small.Close() }) // last: after the cleanups of its roles and database
	if !small.Own() {
		t.Skip("the tests use an existing server, whose max_connections is its own")
	}
	db = newTestDBIn(t, small)
	return small, db, small.NewRole(t, "alice", db.name), small.NewRole(t, "other", db.name)
}

// lockTable begins a transaction of a superuser on database of c that locks pgjobs.table in ACCESS
// EXCLUSIVE mode, as a DBA's maintenance does, and returns it; it is rolled back when the test ends,
// unless it ended sooner.
func lockTable(t *testing.T, ctx context.Context, c *pgtest.Cluster, database, table string) pgx.Tx {
	t.Helper()
	dba, err := c.Connect(t, database).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dba.Rollback(context.Background()) })
	if _, err := dba.Exec(ctx, "LOCK TABLE pgjobs."+table+" IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	return dba
}
