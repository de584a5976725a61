package agent_test

// The services restarted in a term after a lock timeout: the lead is kept, and every fire gets
// exactly one record.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// TestLockTimeoutKeepsTheLead: a lock the leader's reload waits for past lock_timeout (a DBA's
// maintenance holding pgj_job_, which the watch for intruders leaves alone) restarts the leader's
// services in its term, with a new epoch, instead of giving the lead to the standby: the startup
// job does not run again, and the 10:01 fire claimed ahead before the restart runs once, at 10:01.
func TestLockTimeoutKeepsTheLead(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `SELECT pgj_create_startup_job('Hello', 'note(''Hello'')'), pgj_create_schedule('At01', 'D 01'),
		pgj_create_job('Tick', 'note(''Tick'')', null, 'At01')`)
	ctx := context.Background()
	clockA := fakeclock.New(t0)
	_, logsA := startAgent(t, clockA, db)
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Hello ok startup" {
		t.Fatalf("runs = %v", got)
	}
	_, logsB := startAgentWith(t, fakeclock.New(t0), func(o *agent.Options) {
		o.LeaderPing, o.LeaderTimeout = 100*time.Millisecond, 8*time.Second
	}, db)
	if !logsB.wait(t, 1, agent.EventStandingBy, 10*time.Second) {
		t.Fatal("B does not stand by")
	}
	mustSleepUntil(t, clockA, t0.Add(58*time.Second)) // wakes early to warm and claim ahead
	clockA.Set(t0.Add(58 * time.Second))
	mustSleepUntil(t, clockA, t0.Add(time.Minute))
	var epoch int64
	if err := db.conn.QueryRow(ctx, "SELECT epoch FROM pgjobs.pgj_leader_").Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	dba := lockTable(t, ctx, cluster, db.name, "pgj_job_")
	db.exec(t, "NOTIFY pgjobs") // the reload waits for the lock, 5 s
	if !logsA.wait(t, 1, agent.EventServicesRestarted, 20*time.Second) {
		t.Fatalf("the leader's services did not start again:\n%s", logsA)
	}
	if err := dba.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	clockA.Set(t0.Add(time.Minute))
	if got := db.waitRuns(t, 2); strings.Join(got, ";") != "Hello ok startup;Tick ok 10:01" {
		t.Fatalf("runs = %v\n%s", got, logsA)
	}
	var renewed int64
	if err := db.conn.QueryRow(ctx, "SELECT epoch FROM pgjobs.pgj_leader_").Scan(&renewed); err != nil || renewed <= epoch {
		t.Fatalf("the lease's epoch is %d (%v), want it renewed from %d", renewed, err, epoch)
	}
	if logsB.count(1, agent.EventTakingOver) > 0 || logsA.count(1, agent.EventLostLead) > 0 {
		t.Fatalf("the standby took over:\n%s\n%s", logsA, logsB)
	}
	if got := db.runs(t); strings.Join(got, ";") != "Hello ok startup;Tick ok 10:01" || calls(t, db) != "Hello,Tick" {
		t.Fatalf("runs %v, calls %q: want the startup job once and the 10:01 fire once", got, calls(t, db))
	}
}

// TestRestartLeavesAWaitingRunItsFire: the 10:01 run waits for a session (the server refuses it)
// when the services restart past late_limit: the restarted services do not record 10:01 as missed,
// and the run records it once it starts (found by the attacker review: it was recorded twice).
func TestRestartLeavesAWaitingRunItsFire(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	small, db, alice, other := smallServer(t, ctx)
	if _, err := small.ConnectAs(t, db.name, alice).Exec(ctx, "SELECT pgj_create_schedule('Each', 'D 01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'Each')"); err != nil {
		t.Fatal(err)
	}
	dba, err := small.Connect(t, db.name).Begin(ctx) // opened before the hogs take every slot
	if err != nil {
		t.Fatal(err)
	}
	defer dba.Rollback(ctx)
	clock := fakeclock.New(t0)
	hogs := small.TakeEverySlot(t, db.name, other)
	_, logs := startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	if !logs.wait(t, 1, agent.EventRunRefused, 15*time.Second) {
		t.Fatal("the run's session was not refused")
	}
	clock.Set(t0.Add(time.Minute + 40*time.Second)) // past late_limit (30 s); the run still waits
	if _, err := dba.Exec(ctx, "LOCK TABLE pgjobs.pgj_job_ IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	db.exec(t, "NOTIFY pgjobs")
	if !logs.wait(t, 1, agent.EventServicesRestarted, 20*time.Second) {
		t.Fatalf("no restart:\n%s", logs)
	}
	if err := dba.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	mustSleepUntil(t, clock, t0.Add(time.Hour+58*time.Second)) // the restarted loop has looked for missed fires
	for _, c := range hogs {
		c.Close(ctx)
	}
	if got := strings.Join(db.waitRuns(t, 1), ";"); got != "Tick ok 10:01" {
		t.Fatalf("runs = %s, want the 10:01 fire recorded once, by its run\n%s", got, logs)
	}
}

// TestClaimOutlivesAFailedCheck: the 10:01 fire claimed ahead is kept for the next term when the
// check of its stale claim waits past lock_timeout (a DBA's lock on the lease) and ends the term:
// the agent's next term runs it (found by the attacker review: it was neither run nor recorded).
func TestClaimOutlivesAFailedCheck(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'At01')`)
	ctx := context.Background()
	clock := fakeclock.New(t0)
	_, logs := startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(58*time.Second))
	clock.Set(t0.Add(58 * time.Second)) // claims 10:01 ahead
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	var leader int
	if err := db.conn.QueryRow(ctx, "SELECT pid FROM pgjobs.pgj_leader_").Scan(&leader); err != nil {
		t.Fatal(err)
	}
	dba := lockTable(t, ctx, cluster, db.name, "pgj_leader_")
	time.Sleep(claimFreshFor) // the claim ahead is stale: its fire asks the lease first
	clock.Set(t0.Add(time.Minute))
	if !eventually(t, 30*time.Second, "the term to end on the lock", func() bool {
		var open bool
		return db.conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)", leader).Scan(&open) == nil && !open
	}) {
		t.Fatalf("the leader session stayed:\n%s", logs)
	}
	if err := dba.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Set(t0.Add(time.Minute + time.Second)) // the reconnect's pause, on the agent's clock
	if got := strings.Join(db.waitRuns(t, 1), ";"); got != "Tick ok 10:01" {
		t.Fatalf("runs = %s, want the 10:01 fire run once\n%s", got, logs)
	}
}

// claimFreshFor is how long a claim ahead is fresh (jobs.claimFresh), and a little more.
const claimFreshFor = 3*time.Second + 100*time.Millisecond
