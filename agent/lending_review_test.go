package agent_test

// Found by the README-only attack on the session lending: an outage must not hand the agents' own
// places in the budget to runs, and a dropped job's waiting run must not start.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// TestOutageKeepsTheLeadersShare: while a database agent reconnects, its leader session's share of
// the budget stays reserved. Handed to runs meanwhile, one owner's backlog took it, and once the
// agent was back the budget was over its size with that owner holding every session another
// owner's next run needed (the attacker review).
func TestOutageKeepsTheLeadersShare(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	m, logs := startAgent(t, fakeclock.New(t0), db)
	// Idle: its term has loaded the jobs (none) on its own sessions, which an outage from the lead
	// on would otherwise refuse, ending the term before the test ends its session.
	if !logs.events.wait(t, 1, agent.EventIdle, 10*time.Second) {
		t.Fatal("the agent never led and loaded its jobs")
	}
	before := m.Sessions()[0].InUse
	admin := cluster.Connect(t, "postgres")
	if _, err := admin.Exec(context.Background(), "ALTER DATABASE "+db.name+" ALLOW_CONNECTIONS false"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(context.Background(), "ALTER DATABASE "+db.name+" ALLOW_CONNECTIONS true") })
	endLeaderSession(t, db)
	// The fake clock never ends the pause between attempts: the outage lasts.
	if !eventually(t, 10*time.Second, "the database agent to find its database unavailable", func() bool {
		st, _ := m.Status()
		return len(st) == 1 && st[0].State == agent.StateUnavailable
	}) {
		t.Fatal("the outage was not seen")
	}
	if got := m.Sessions()[0].InUse; got != before {
		t.Fatalf("sessions counted against the budget during the outage: %d, want %d as before it", got, before)
	}
}

// TestDroppedJobsWaitingRunDoesNotStart: a run waiting for a session when its job is dropped gives
// up its wait, is recorded as not started, and never runs (the attacker review: it started minutes
// later, once a session was free).
func TestDroppedJobsWaitingRunDoesNotStart(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_startup_job('A', 'slow(''A'', 2)'), pgj_create_startup_job('B', 'slow(''B'', 2)')")
	// 4 sessions: the leader's and two for the history leave one for runs.
	_, logs := startAgentWith(t, fakeclock.New(t0), func(o *agent.Options) { o.Sessions = 4 }, db)
	running, waiting := runningAndWaiting(t, db, logs)
	db.exec(t, "SELECT pgj_drop_job($1)", waiting)
	checkDroppedDidNotRun(t, db, running, waiting)
}

// TestJobDroppedBetweenTermsWaitingRunDoesNotStart: a job dropped while the agent had no leader
// session sends a notification no session listens for; the next term's first load still ends its
// waiting run's wait (the review of the change above).
func TestJobDroppedBetweenTermsWaitingRunDoesNotStart(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_startup_job('A', 'slow(''A'', 4)'), pgj_create_startup_job('B', 'slow(''B'', 4)')")
	clock := fakeclock.New(t0)
	m, logs := startAgentWith(t, clock, func(o *agent.Options) { o.Sessions = 4 }, db)
	running, waiting := runningAndWaiting(t, db, logs)
	endLeaderSession(t, db)
	// The fake clock holds the pause before the next attempt: the drop comes between the terms.
	if !eventually(t, 10*time.Second, "the database agent to lose its session", func() bool {
		st, _ := m.Status()
		return len(st) == 1 && st[0].State == agent.StateUnavailable
	}) {
		t.Fatal("the leader session's loss was not seen")
	}
	db.exec(t, "SELECT pgj_drop_job($1)", waiting)
	clock.Advance(time.Second)
	checkDroppedDidNotRun(t, db, running, waiting)
}

// runningAndWaiting waits until one of the startup jobs A and B runs and the other waits for a
// session, and returns their names.
func runningAndWaiting(t *testing.T, db testDB, logs *agentOutput) (running, waiting string) {
	t.Helper()
	if !eventually(t, 10*time.Second, "one run to go on and the other to wait", func() bool {
		for _, r := range db.runs(t) {
			if strings.HasSuffix(r, " running startup") {
				running = strings.Fields(r)[0]
			}
		}
		return running != "" && strings.Contains(logs.String(), "waiting for a session")
	}) {
		t.Fatalf("runs = %v", db.runs(t))
	}
	return running, map[string]string{"A": "B", "B": "A"}[running]
}

// checkDroppedDidNotRun checks that the running job's run ended ok and the dropped one's was
// recorded as not started, and never ran.
func checkDroppedDidNotRun(t *testing.T, db testDB, running, dropped string) {
	t.Helper()
	got := db.waitRuns(t, 2)
	slices.Sort(got)
	want := []string{running + " ok startup", dropped + " error startup"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
	var message string
	if err := db.conn.QueryRow(context.Background(), "SELECT runmessage FROM pgjobs.pgj_run_ WHERE runjobname = $1", dropped).Scan(&message); err != nil || !strings.Contains(message, "dropped") {
		t.Fatalf("the dropped job's run: %q, %v", message, err)
	}
	var calls int
	if err := db.conn.QueryRow(context.Background(), "SELECT count(*) FROM calls WHERE job = $1", dropped).Scan(&calls); err != nil || calls != 0 {
		t.Fatalf("the dropped job ran %d times (%v)", calls, err)
	}
}
