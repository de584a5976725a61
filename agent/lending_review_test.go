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
	if !logs.events.wait(t, 1, agent.EventActive, 10*time.Second) {
		t.Fatal("the agent never led")
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
	var running string
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
	waiting := map[string]string{"A": "B", "B": "A"}[running]
	db.exec(t, "SELECT pgj_drop_job($1)", waiting)
	got := db.waitRuns(t, 2)
	slices.Sort(got)
	want := []string{running + " ok startup", waiting + " error startup"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("runs = %v, want %v", got, want)
	}
	var message string
	if err := db.conn.QueryRow(context.Background(), "SELECT runmessage FROM pgjobs.pgj_run_ WHERE runjobname = $1", waiting).Scan(&message); err != nil || !strings.Contains(message, "dropped") {
		t.Fatalf("the dropped job's run: %q, %v", message, err)
	}
	var calls int
	if err := db.conn.QueryRow(context.Background(), "SELECT count(*) FROM calls WHERE job = $1", waiting).Scan(&calls); err != nil || calls != 0 {
		t.Fatalf("the dropped job ran %d times (%v)", calls, err)
	}
}
