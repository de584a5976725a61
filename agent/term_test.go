package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// How a leadership term starts and what it runs late.

// TestStartAfterAnOutageRunsRecentFiresLate: an agent starting at 10:01:20 runs the fire of 10:01,
// which no agent could run, 20 s late (within late_limit, 30 s), and records the fire of 9:59 as
// missed.
func TestStartAfterAnOutageRunsRecentFiresLate(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `SELECT pgj_create_schedule('At59', 'D 59'), pgj_create_schedule('At01', 'D 01'),
		pgj_create_job('Old', 'note(''Old'')', null, 'At59'), pgj_create_job('Recent', 'note(''Recent'')', null, 'At01')`)
	early := t0.Add(-2 * time.Minute) // 9:58
	first, _ := startAgentWith(t, fakeclock.New(early), func(o *agent.Options) { o.Start = early }, db)
	if !eventually(t, 10*time.Second, "the first agent's plans", func() bool {
		var n int
		db.conn.QueryRow(context.Background(), "SELECT count(*) FROM pgjobs.pgj_fire_ WHERE firenext IS NOT NULL").Scan(&n)
		return n == 2
	}) {
		t.Fatal("the first agent planned nothing")
	}
	first.Stop(5 * time.Second)
	_, logs := startAgent(t, fakeclock.New(t0.Add(80*time.Second)), db)
	got := db.waitRuns(t, 2)
	if strings.Join(got, ";") != "Old missed 09:59;Recent ok 10:01" {
		t.Fatalf("runs = %v", got)
	}
	var started time.Time
	if err := db.conn.QueryRow(context.Background(), "SELECT runstarted FROM pgjobs.pgj_run_ WHERE runjobname = 'Recent'").Scan(&started); err != nil || !started.Equal(t0.Add(80*time.Second)) {
		t.Fatalf("Recent started at %v (%v), want 10:01:20", started, err)
	}
	if !strings.Contains(logs.String(), "the fire of 2026-11-20T10:01:00Z runs 20s late") {
		t.Fatalf("no line saying the fire runs late:\n%s", logs)
	}
}

// TestTakeoverIsAStart: a standby that takes over runs the startup jobs again, and counts interval
// schedules from the takeover, with no missed rows for the intervals of the agent it replaced.
func TestTakeoverIsAStart(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `SELECT pgj_create_startup_job('Hello', 'note(''Hello'')'), pgj_create_schedule('Every5', 'I 0:05'),
		pgj_create_job('Five', 'note(''Five'')', null, 'Every5')`)
	clock := fakeclock.New(t0)
	first, _ := startAgent(t, clock, db)
	db.waitRuns(t, 1) // Hello
	fireAt(t, db, clock, t0.Add(5*time.Minute), 2)
	first.Stop(5 * time.Second)
	takeover := t0.Add(7*time.Minute + 30*time.Second)
	clock2 := fakeclock.New(takeover)
	startAgent(t, clock2, db)
	db.waitRuns(t, 3) // Hello again
	got := fireAt(t, db, clock2, takeover.Add(5*time.Minute), 4)
	if want := "Hello ok startup;Five ok 10:05;Hello ok startup;Five ok 10:12"; strings.Join(got, ";") != want {
		t.Fatalf("runs = %v, want %s", got, want)
	}
	var scheduled time.Time
	if err := db.conn.QueryRow(context.Background(), "SELECT max(runscheduled) FROM pgjobs.pgj_run_").Scan(&scheduled); err != nil || !scheduled.Equal(takeover.Add(5*time.Minute)) {
		t.Fatalf("the interval fire after the takeover: %v (%v), want 10:12:30", scheduled, err)
	}
}

// TestOverdueFireIsMissed: a leader whose loop was held up past a fire by more than late_limit
// records the fire as missed instead of running it that late.
func TestOverdueFireIsMissed(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'At01')")
	var block atomic.Bool
	blocked, release := make(chan struct{}, 1), make(chan struct{})
	clock := fakeclock.New(t0)
	startAgentWith(t, clock, func(o *agent.Options) {
		o.OnReload = func(int) {
			if block.Load() {
				blocked <- struct{}{}
				<-release
			}
		}
	}, db)
	mustSleepUntil(t, clock, t0.Add(58*time.Second)) // the warm-up before 10:01
	block.Store(true)
	db.exec(t, "NOTIFY pgjobs")
	<-blocked
	clock.Set(t0.Add(2 * time.Minute)) // the loop is held up until 10:02
	close(release)
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Tick missed 10:01" || calls(t, db) != "" {
		t.Fatalf("runs = %v, calls %q", got, calls(t, db))
	}
}
