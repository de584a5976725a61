package agent_test

// Failover of the database server itself, tested for real: a streaming replica is promoted after
// its primary stops (pgtest.StartReplica, Promote), and the agent follows it.
//
// The agent runs with its real reconnection backoff (RetryMin 1 s, RetryMax 1 min) on a fake
// clock that the tests move from one of the agent's wakes to the next: the pauses cost no real
// time, and the delay from the promotion to the agent's next try is measured on the agent's clock.

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
	"github.com/pgjobs/pgjobs/internal/pgtest"
	"github.com/pgjobs/pgjobs/internal/syncbuf"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// followWithin is how soon after a promotion the agent must be active on the new primary.
const followWithin = 15 * time.Second

// TestFailoverToPromotedReplica: an agent configured with the host list primary,replica fires on
// the primary; the primary stops, and the replica is promoted 3 min 50 s later. The agent is
// active on the promoted replica within 15 s of the promotion, records the fires of the gap as
// missed in one row, runs none of them late and none twice, and fires on time from then on.
func TestFailoverToPromotedReplica(t *testing.T) {
	t.Parallel()
	if !cluster.Own() {
		t.Skip("the server of " + pgtest.DSNVariable + " has no replica of ours")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary := startCluster(ctx, t)
	db := newTestDBOn(t, primary)
	db.exec(t, "SELECT pgj_create_schedule('Every1', 'I 0:01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'Every1')")
	replica := startReplica(ctx, t, primary)
	// As config.Database.DSN writes a host list, with a port per host: each cluster has its own.
	dsn := fmt.Sprintf("host=%s,%s port=%d,%d dbname=%s user=%s sslmode=disable connect_timeout=10 target_session_attrs=read-write",
		primary.Host(), replica.Host(), primary.Port(), replica.Port(), db.name, primary.User())
	clock := fakeclock.New(t0)
	_, logs := startAgentOn(t, clock, dsn)

	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	db.waitRuns(t, 1)
	if !eventually(t, 10*time.Second, "the plan of 10:02 to be recorded", func() bool {
		var planned bool
		if err := db.conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pgjobs.pgj_fire_ WHERE firenext = $1)", t0.Add(2*time.Minute)).Scan(&planned); err != nil {
			t.Fatal(err)
		}
		return planned
	}) {
		t.Fatal("the agent never recorded its plan")
	}
	if err := replica.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}

	if err := primary.StopServer(ctx); err != nil {
		t.Fatal(err)
	}
	// The agent lost its session: its retry (RetryMin) replaces its sleep until 10:01:58.
	if !clock.WaitForTimer(clock.Now().Add(time.Second), 15*time.Second) {
		t.Fatal("the agent did not notice that the primary stopped")
	}
	promotedAt := t0.Add(4*time.Minute + 50*time.Second) // 10:02, 10:03 and 10:04 pass with no primary
	tries := stepRetries(t, clock, promotedAt)
	started := time.Now()
	if err := replica.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoting := time.Since(started)
	db = testDB{name: db.name, conn: replica.Connect(t, db.name)}
	activeAt, took := followPromotion(t, clock, promotedAt, func() bool {
		var missed bool
		if err := db.conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pgjobs.pgj_run_ WHERE runstatus = 'missed')").Scan(&missed); err != nil {
			t.Fatal(err)
		}
		return missed
	})

	var got []string
	for i, at := range []time.Time{t0.Add(5 * time.Minute), t0.Add(6 * time.Minute)} {
		mustSleepUntil(t, clock, at) // it has not fired yet: the fire runs at its minute, not late
		clock.Set(at)
		got = db.waitRuns(t, 3+i)
	}
	if want := "Tick ok 10:01;Tick missed 10:04;Tick ok 10:05;Tick ok 10:06"; strings.Join(got, ";") != want {
		t.Fatalf("runs on the promoted replica = %v, want %s", got, want)
	}
	var message string
	var calls int
	if err := db.conn.QueryRow(ctx, `SELECT (SELECT runmessage FROM pgjobs.pgj_run_ WHERE runstatus = 'missed'),
		(SELECT count(*) FROM calls)`).Scan(&message, &calls); err != nil {
		t.Fatal(err)
	}
	if want := "3 fires from 2026-11-20T10:02:00Z to 2026-11-20T10:04:00Z were missed"; !strings.HasPrefix(message, want) {
		t.Fatalf("missed message %q, want it to start with %q", message, want)
	}
	if calls != 3 {
		t.Fatalf("the job ran %d times, want 3 (10:01 on the primary, 10:05 and 10:06 on the replica)", calls)
	}
	if n := logs.count(agentlog.LevelError, "reconnecting"); n != 1 {
		t.Errorf("the outage was logged %d times at the error level, want 1 (of %d tries)", n, tries+1)
	}
	t.Logf("measured: %d tries while no primary; pg_promote took %s; the agent's next try came %s after the promotion on its clock, and it was active %s (real time) after that try began; the fire of 10:05 ran %s after the promotion",
		tries, promoting.Round(time.Millisecond), activeAt.Sub(promotedAt), took.Round(time.Millisecond), t0.Add(5*time.Minute).Sub(promotedAt))
}

// TestStandbyOnlyLogsOnceAndLeadsWhenPromoted: an agent pointed only at a standby in recovery logs
// it once, not once per try, fires nothing and keeps trying; once the standby is promoted it leads
// within 15 s and fires.
func TestStandbyOnlyLogsOnceAndLeadsWhenPromoted(t *testing.T) {
	t.Parallel()
	if !cluster.Own() {
		t.Skip("the server of " + pgtest.DSNVariable + " has no replica of ours")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	primary := startCluster(ctx, t)
	db := newTestDBOn(t, primary)
	db.exec(t, "SELECT pgj_create_schedule('Every1', 'I 0:01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'Every1')")
	replica := startReplica(ctx, t, primary)
	if err := replica.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	name, logs := startAgentOn(t, clock, replica.DSN(db.name))

	promotedAt := t0.Add(40 * time.Second)
	tries := stepRetries(t, clock, promotedAt)
	if tries < 5 {
		t.Fatalf("the agent tried %d times in 40 s, want at least 5", tries)
	}
	if n := logs.count(agentlog.LevelError, "reconnecting"); n != 1 {
		t.Fatalf("the standby was logged %d times at the error level in %d tries, want 1", n, tries)
	}
	if n := logs.count(agentlog.LevelDebug, "reconnecting"); n < tries-1 {
		t.Fatalf("%d tries logged at the debug level, want %d", n, tries-1)
	}

	if err := replica.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	onReplica := testDB{name: db.name, conn: replica.Connect(t, db.name)}
	activeAt, took := followPromotion(t, clock, promotedAt, func() bool {
		var leader *string
		if err := onReplica.conn.QueryRow(ctx, "SELECT agent FROM pgjobs.pgj_leader_").Scan(&leader); err != nil {
			t.Fatal(err)
		}
		return leader != nil && *leader == name
	})
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	if got := onReplica.waitRuns(t, 1); strings.Join(got, ";") != "Tick ok 10:01" {
		t.Fatalf("runs = %v, want Tick ok 10:01", got)
	}
	if n := logs.count(agentlog.LevelError, ""); n != 1 {
		t.Errorf("%d errors logged, want 1 (the standby)", n)
	}
	t.Logf("measured: %d tries on the standby, 1 logged as an error; the agent's next try came %s after the promotion on its clock, and it led %s (real time) after that try began",
		tries, activeAt.Sub(promotedAt), took.Round(time.Millisecond))
}

// startCluster starts a cluster of the test's own, which it may stop, and removes it when the test
// ends.
func startCluster(ctx context.Context, t *testing.T) *pgtest.Cluster {
	t.Helper()
	c, err := pgtest.StartWith(ctx, pgtest.Settings{MaxConnections: 100})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c
}

// startReplica starts a streaming replica of primary and removes it when the test ends.
func startReplica(ctx context.Context, t *testing.T, primary *pgtest.Cluster) *pgtest.Cluster {
	t.Helper()
	r, err := primary.StartReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// newTestDBOn is newTestDB on a cluster of the test's own; the database goes with the cluster.
func newTestDBOn(t *testing.T, c *pgtest.Cluster) testDB {
	t.Helper()
	ctx := context.Background()
	name := "pgjobs_failover"
	if _, err := c.Connect(t, "postgres").Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	conn := c.Connect(t, name)
	if err := sqlschema.Install(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, jobFunctions); err != nil {
		t.Fatal(err)
	}
	return testDB{name: name, conn: c.Connect(t, name), on: c} // a new session: the search_path now has pgjobs
}

// startAgentOn runs a master agent on the database of dsn with the agent's default reconnection
// backoff, and stops it when the test ends. It returns the agent's name and its log records.
func startAgentOn(t *testing.T, clock agent.Clock, dsn string) (string, *logRecords) {
	t.Helper()
	text := &syncbuf.Buffer{}
	logs := &logRecords{}
	logger := slog.New(recordingHandler{slog.NewTextHandler(text, &slog.HandlerOptions{Level: slog.LevelDebug}), logs})
	name := fmt.Sprintf("test %s %d", t.Name(), agentNumber.Add(1))
	m := agent.NewMaster(agent.Options{
		Clock:    clock,
		Location: time.UTC,
		Start:    t0,
		Name:     name,
		Logger:   func(id, level int) *slog.Logger { return logger.With("db", id) },
	}, logger)
	m.Apply([]agent.Database{{ID: 1, DSN: dsn, LogLevel: 5}})
	t.Cleanup(func() {
		m.Stop(5 * time.Second)
		if t.Failed() {
			t.Logf("agent log:\n%s", text.String())
		}
	})
	return name, logs
}

// nextTimer waits for the agent's next wake on clock (a retry, or its sleep until a fire) and
// returns when it is due.
func nextTimer(t *testing.T, clock *fakeclock.Clock) time.Time {
	t.Helper()
	at, ok := clock.NextTimer(15 * time.Second)
	if !ok {
		t.Fatal("the agent set no timer: it neither retries nor sleeps")
	}
	return at
}

// stepRetries moves clock from one of the agent's tries to the next until the next would come
// after until, sets the clock to until, and returns how many tries it let the agent make.
func stepRetries(t *testing.T, clock *fakeclock.Clock, until time.Time) int {
	t.Helper()
	for tries := 0; ; tries++ {
		next := nextTimer(t, clock)
		if next.After(until) {
			clock.Set(until)
			return tries
		}
		clock.Set(next)
	}
}

// followPromotion moves clock to the agent's tries after a promotion at promotedAt, until active
// holds after one; it fails the test when no try comes within followWithin. It returns the clock's
// time of the try that succeeded and the real time the agent took from that try to its next wait.
func followPromotion(t *testing.T, clock *fakeclock.Clock, promotedAt time.Time, active func() bool) (time.Time, time.Duration) {
	t.Helper()
	for {
		next := nextTimer(t, clock)
		if wait := next.Sub(promotedAt); wait > followWithin {
			t.Fatalf("the agent's next try after the promotion comes %s after it, want at most %s", wait, followWithin)
		}
		clock.Set(next)
		tried := time.Now()
		nextTimer(t, clock) // the try is over: the agent retries or sleeps until its next fire
		took := time.Since(tried)
		if active() {
			return next, took
		}
	}
}

// logRecords counts the log records of an agent by level and status.
type logRecords struct {
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	level  slog.Level
	status string
}

// count returns how many records have level and, unless status is "", status.
func (l *logRecords) count(level slog.Level, status string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.records {
		if r.level == level && (status == "" || r.status == status) {
			n++
		}
	}
	return n
}

// recordingHandler writes the log as text, shown when a test fails, and keeps each record's level
// and status for counting.
type recordingHandler struct {
	slog.Handler
	records *logRecords
}

func (h recordingHandler) Handle(ctx context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "status" {
			rec.status = a.Value.String()
		}
		return true
	})
	h.records.mu.Lock()
	h.records.records = append(h.records.records, rec)
	h.records.mu.Unlock()
	return h.Handler.Handle(ctx, r)
}

func (h recordingHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return recordingHandler{h.Handler.WithAttrs(attrs), h.records}
}

func (h recordingHandler) WithGroup(name string) slog.Handler {
	return recordingHandler{h.Handler.WithGroup(name), h.records}
}
