package agent_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// The attacks on the leader lease found by the review of schema version 3 (docs/security.md),
// each made by an ordinary LOGIN role, and the ways a leader could lose its lead or keep firing.

// TestQueuedLockOnTheLeaseIsEnded: alice holds ACCESS SHARE on pgj_leader_ without any privilege
// (a PREPAREd SELECT, parsed but never run, in an open or a prepared transaction) and queues
// CREATE RULE on it behind that: every statement of the agent on the lease queues behind her. The
// agent ends her queued session, warns about the prepared transaction, and fires.
func TestQueuedLockOnTheLeaseIsEnded(t *testing.T) {
	t.Parallel()
	for _, prepared := range []bool{false, true} {
		name := map[bool]string{false: "open transaction", true: "prepared transaction"}[prepared]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			db := newTestDB(t)
			alice := cluster.NewRole(t, "alice", db.name)
			db.exec(t, "SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'At01')")
			ctx := context.Background()
			clock := fakeclock.New(t0)
			_, logs := startAgent(t, clock, db)
			mustSleepUntil(t, clock, t0.Add(time.Minute))
			holder := cluster.ConnectAs(t, db.name, alice)
			if _, err := holder.Exec(ctx, "BEGIN; PREPARE p AS SELECT FROM pgjobs.pgj_leader_"); err != nil {
				t.Fatal(err)
			}
			if prepared {
				if _, err := holder.Exec(ctx, "PREPARE TRANSACTION 'alice lease'"); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { db.conn.Exec(context.Background(), "ROLLBACK PREPARED 'alice lease'") })
			}
			ruler := cluster.ConnectAs(t, db.name, alice)
			queued := make(chan error, 1)
			go func() {
				_, err := ruler.Exec(ctx, "CREATE RULE r AS ON INSERT TO pgjobs.pgj_leader_ DO INSTEAD NOTHING")
				queued <- err
			}()
			if !eventually(t, 10*time.Second, "alice's CREATE RULE to wait", func() bool {
				var waiting int
				err := db.conn.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid = $1", ruler.PgConn().PID()).Scan(&waiting)
				return err == nil && waiting > 0
			}) {
				t.Fatal("alice's CREATE RULE does not wait")
			}
			clock.Set(t0.Add(time.Minute))
			// The claim waits behind her; once it has waited 2 s, the agent ends her session.
			if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Tick ok 10:01" {
				t.Fatalf("runs = %v", got)
			}
			if err := <-queued; err == nil {
				t.Fatal("alice's CREATE RULE went through")
			}
			want, event := "ended session", agent.EventIntruder
			if prepared {
				want = `the prepared transaction \"alice lease\" of role ` + alice + ` holds a lock on pgjobs.pgj_leader_` // as the text log quotes it
				event = agent.EventPreparedLock
			}
			if !logs.wait(t, 1, event, 10*time.Second) || !strings.Contains(logs.String(), want) {
				t.Fatalf("no warning %q:\n%s", want, logs)
			}
		})
	}
}

// TestQueuedLocksDoNotDeposeALiveLeader: alice holds ACCESS SHARE on the agent's tables, queues
// CREATE RULE on each, makes the leader reload (NOTIFY pgjobs), and cancels each of her waiters
// 4.5 s into the agent's wait on it (pg_locks.waitstart is visible to every role), so that no wait
// reaches the agent's lock_timeout while the reload stalls past the standby's timeout. The agents
// end her waiters (the leader once its loop has been busy for 2 s, the standby before each look),
// and the leader keeps answering: no takeover.
func TestQueuedLocksDoNotDeposeALiveLeader(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	ctx := context.Background()
	clock := fakeclock.New(t0)
	_, logsA := startAgent(t, clock, db) // the default LeaderPing 2 s and LeaderTimeout 8 s
	if !logsA.wait(t, 1, agent.EventActive, 10*time.Second) {
		t.Fatal("A does not lead")
	}
	_, logsB := startAgent(t, clock, db)
	if !logsB.wait(t, 1, agent.EventStandingBy, 10*time.Second) {
		t.Fatal("B does not stand by")
	}
	tables := []string{"pgj_job_", "pgj_schedule_", "pgj_job_schedule_", "pgj_fire_", "pgj_run_"}
	holder := cluster.ConnectAs(t, db.name, alice)
	if _, err := holder.Exec(ctx, "BEGIN; PREPARE p AS SELECT FROM pgjobs.pgj_job_, pgjobs.pgj_schedule_, pgjobs.pgj_job_schedule_, pgjobs.pgj_fire_, pgjobs.pgj_run_"); err != nil {
		t.Fatal(err)
	}
	waiters := map[string]uint32{} // table -> pid of alice's CREATE RULE
	ended := make(chan struct{}, len(tables))
	var endedEarly atomic.Int64 // ended before all queued: the standby ends them before each look
	for _, tbl := range tables {
		c := cluster.ConnectAs(t, db.name, alice)
		waiters[tbl] = c.PgConn().PID()
		go func() {
			c.Exec(ctx, "CREATE RULE r AS ON INSERT TO pgjobs."+tbl+" DO INSTEAD NOTHING")
			endedEarly.Add(1)
			ended <- struct{}{}
		}()
	}
	watch := cluster.ConnectAs(t, db.name, alice)
	if !eventually(t, 10*time.Second, "alice's rules to queue", func() bool {
		var n int
		watch.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted AND mode = 'AccessExclusiveLock'").Scan(&n)
		return n+int(endedEarly.Load()) == len(tables)
	}) {
		t.Fatal("alice's rules do not queue")
	}
	if _, err := watch.Exec(ctx, "NOTIFY pgjobs"); err != nil {
		t.Fatal(err)
	}
	// Cancel the waiter of the table the agent waits on, 4.5 s into its wait, until all of her
	// waiters have ended (cancelled by her, or ended by the agent).
	deadline := time.Now().Add(40 * time.Second)
	for left := len(tables); left > 0 && time.Now().Before(deadline); {
		select {
		case <-ended:
			left--
			continue
		case <-time.After(50 * time.Millisecond):
		}
		rows, _ := watch.Query(ctx, `SELECT c.relname::text FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE NOT l.granted AND l.mode = 'AccessShareLock' AND c.relnamespace = 'pgjobs'::regnamespace
			  AND l.waitstart < now() - interval '4.5 s'`)
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if pid, ok := waiters[n]; ok {
				watch.Exec(ctx, "SELECT pg_cancel_backend($1)", pid)
				delete(waiters, n)
			}
		}
	}
	if logsB.count(1, agent.EventTakingOver) > 0 {
		t.Fatalf("alice made the standby depose a live leader:\n%s", logsB)
	}
	if !waitEither(t, agent.EventIntruder, 10*time.Second, logsA.events, logsB.events) {
		t.Fatalf("no agent ended alice's waiters:\n%s\n%s", logsA, logsB)
	}
}

// TestDeposedLeaderFiresNothing: the leader claims the 10:01 fire ahead (at 10:00:58), then its
// loop stalls (blocked in the OnReload hook, as a stuck loop would be). It stops answering once
// busy for LeaderBusyLimit; a standby takes over and records 10:01 as missed. When the old loop
// resumes, its claim ahead is stale: it asks the lease, finds it lost the lead, and fires nothing.
func TestDeposedLeaderFiresNothing(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'At01')")
	ctx := context.Background()
	var block atomic.Bool
	blocked, release := make(chan struct{}, 1), make(chan struct{})
	var released atomic.Bool
	t.Cleanup(func() {
		if !released.Swap(true) {
			close(release)
		}
	})
	clockA := fakeclock.New(t0)
	_, logsA := startAgentWith(t, clockA, func(o *agent.Options) {
		o.LeaderBusyLimit = 2 * time.Second
		o.OnReload = func(int) {
			if block.Load() {
				blocked <- struct{}{}
				<-release
			}
		}
	}, db)
	mustSleepUntil(t, clockA, t0.Add(58*time.Second)) // wakes early to warm and claim ahead
	clockA.Set(t0.Add(58 * time.Second))
	mustSleepUntil(t, clockA, t0.Add(time.Minute))
	var firelast time.Time
	if err := db.conn.QueryRow(ctx, "SELECT firelast FROM pgjobs.pgj_fire_").Scan(&firelast); err != nil || !firelast.Equal(t0.Add(time.Minute)) {
		t.Fatalf("claimed ahead: %v %v", firelast, err)
	}
	block.Store(true)
	db.exec(t, "NOTIFY pgjobs")
	select {
	case <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the leader's loop did not stall")
	}
	_, logsB := startAgentWith(t, fakeclock.New(t0.Add(5*time.Minute)), func(o *agent.Options) {
		o.LeaderPing, o.LeaderTimeout = 100*time.Millisecond, time.Second
	}, db)
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Tick missed 10:01" {
		t.Fatalf("runs after the takeover = %v\n%s", got, logsB)
	}
	clockA.Set(t0.Add(time.Minute))
	released.Store(true)
	close(release)
	if !logsA.wait(t, 1, agent.EventLostLead, 10*time.Second) {
		t.Fatalf("the old leader did not notice it lost the lead:\n%s", logsA)
	}
	if got := db.runs(t); strings.Join(got, ";") != "Tick missed 10:01" || calls(t, db) != "" {
		t.Fatalf("the deposed leader fired: runs %v, calls %q", got, calls(t, db))
	}
}

// TestSoftStopKeepsTheLead: a leader stopping softly keeps answering the standbys while its runs
// go on, so none takes over and starts the same job again meanwhile.
func TestSoftStopKeepsTheLead(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_schedule('Every', 'I 0:01'), pgj_create_job('Slow', 'slow(''Slow'', 4)', null, 'Every')")
	ctx := context.Background()
	clock := fakeclock.New(t0)
	fast := func(o *agent.Options) { o.LeaderPing, o.LeaderTimeout = 100*time.Millisecond, 1500*time.Millisecond }
	mA, logsA := startAgentWith(t, clock, fast, db)
	if !logsA.wait(t, 1, agent.EventActive, 10*time.Second) {
		t.Fatal("A does not lead")
	}
	_, logsB := startAgentWith(t, clock, fast, db)
	if !logsB.wait(t, 1, agent.EventStandingBy, 10*time.Second) {
		t.Fatal("B does not stand by")
	}
	mustSleepUntil(t, clock, t0.Add(58*time.Second))
	clock.Set(t0.Add(58 * time.Second))
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	running := func() int {
		var n int
		if err := db.conn.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pgj_call_ FROM %' AND state = 'active' AND pid <> pg_backend_pid()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if !eventually(t, 10*time.Second, "A's run", func() bool { return running() == 1 }) {
		t.Fatal("A's run does not start")
	}
	mA.Stop(20 * time.Second) // soft: returns once the run has ended, about 4 s, over twice B's timeout
	if logsB.count(1, agent.EventTakingOver) > 0 {
		t.Fatalf("B took the lead while A's run went on:\n%s", logsB)
	}
	if !logsB.wait(t, 1, agent.EventTakingOver, 10*time.Second) {
		t.Fatal("B did not take over after A stopped")
	}
}
