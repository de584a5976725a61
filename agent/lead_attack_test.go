package agent_test

// The attacks of the security model on the lead (docs/security.md), each made by an ordinary LOGIN
// role: no role may take or hold it, a hung leader is replaced and a live one is not.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestNoRoleCanHoldTheLead: before the agent starts, alice tries every way an ordinary role has
// to take or hold the lead: writing or locking the lease, the advisory lock of schema version 2
// held in a prepared transaction (which no session end releases), and a stream
// of wake-ups and pings. The agent leads and fires all the same.
func TestNoRoleCanHoldTheLead(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	db.exec(t, "SELECT pgj_create_startup_job('Hello', 'note(''Hello'')')")
	ctx := context.Background()
	// Also a trap for the agent's own (superuser) session, in a schema of the database's
	// search_path: an overload of the built-in function the agent calls to end sessions.
	db.exec(t, "GRANT CREATE ON SCHEMA public TO "+pgx.Identifier{alice}.Sanitize())
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	if _, err := aliceConn.Exec(ctx, `CREATE FUNCTION public.pg_terminate_backend(pid int, timeout int) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN
			IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN INSERT INTO public.calls (job) VALUES ('escalated'); END IF;
			RETURN false;
		END $$`); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		"UPDATE pgjobs.pgj_leader_ SET epoch = epoch + 1, pid = pg_backend_pid()",
		"SELECT FROM pgjobs.pgj_leader_ FOR KEY SHARE",
		"LOCK TABLE pgjobs.pgj_leader_ IN ACCESS SHARE MODE",
		"DELETE FROM pgjobs.pgj_leader_",
	} {
		tx, err := aliceConn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, sql); err == nil {
			t.Errorf("alice may run %s", sql)
		}
		if _, err := tx.Exec(ctx, "PREPARE TRANSACTION 'alice'"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.conn.Exec(ctx, "ROLLBACK PREPARED 'alice'"); err == nil {
			t.Errorf("a transaction of alice that ran %s could be prepared", sql)
		}
	}
	// What alice can hold: the advisory lock version 2 led by, in a prepared transaction, and a
	// stamp of hers on the agent's table of stamps.
	prepared := cluster.ConnectAs(t, db.name, alice)
	if _, err := prepared.Exec(ctx, "BEGIN; SELECT pg_advisory_xact_lock(hashtext('pgjobs agent leader')::bigint); INSERT INTO pgjobs.pgj_caller_ DEFAULT VALUES; PREPARE TRANSACTION 'alice held'"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.conn.Exec(context.Background(), "ROLLBACK PREPARED 'alice held'") })
	flooding, stopFlood := context.WithCancel(ctx)
	defer stopFlood()
	flooded := make(chan int, 1)
	go func() {
		n := 0
		for ; flooding.Err() == nil; n++ {
			if _, err := aliceConn.Exec(flooding, "NOTIFY pgjobs_leader; NOTIFY pgjobs_ping"); err != nil {
				break
			}
		}
		flooded <- n
	}()
	_, logs := startAgent(t, fakeclock.New(t0), db)
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Hello ok startup" {
		t.Fatalf("runs = %v", got)
	}
	stopFlood()
	if n := <-flooded; n < 10 {
		t.Fatalf("alice sent %d notifications; the test wants a flood", n)
	}
	if c := calls(t, db); strings.Contains(c, "escalated") {
		t.Fatal("the agent called a function alice put in public, as the superuser")
	}
	if logs.count(1, agent.EventStandingBy) > 0 {
		t.Fatalf("the agent stood by for alice:\n%s", logs)
	}
}

// TestHungLeaderIsReplaced: a leader that holds the lease on a live session but answers nothing
// (here a bare session that took it, as a stopped agent would look) is replaced after
// LeaderTimeout: the agent takes the lease with a new epoch, ends the old session, and fires; a
// claim with the old epoch fails.
func TestHungLeaderIsReplaced(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_startup_job('Hello', 'note(''Hello'')')")
	ctx := context.Background()
	hung := cluster.Connect(t, db.name)
	lease, err := sqlschema.LeaderLook(ctx, hung, false)
	if err != nil {
		t.Fatal(err)
	}
	oldEpoch, _, ok, err := sqlschema.LeaderTake(ctx, hung, "hung agent", lease, "UTC")
	if err != nil || !ok {
		t.Fatalf("take the lease: %v %v", ok, err)
	}
	_, logs := startAgentWith(t, fakeclock.New(t0), func(o *agent.Options) {
		o.LeaderPing, o.LeaderTimeout = 100*time.Millisecond, time.Second
	}, db)
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Hello ok startup" {
		t.Fatalf("runs = %v", got)
	}
	for _, want := range []string{"standing by to take over", "left pings unanswered for 1s: taking the lead from it", "ended the session"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("no %q in the log:\n%s", want, logs)
		}
	}
	if err := hung.Ping(ctx); err == nil {
		t.Fatal("the replaced leader's session still lives")
	}
	if _, err := sqlschema.FireClaim(ctx, db.conn, []int{1}, []time.Time{t0}, oldEpoch); !errors.Is(err, sqlschema.ErrLostLead) {
		t.Fatalf("a claim with the replaced leader's epoch: %v, want ErrLostLead", err)
	}
}

// TestLiveLeaderKeepsTheLead: a standby pings the leader for twice its LeaderTimeout; the leader
// answers (at most once a second), and the standby never takes over.
func TestLiveLeaderKeepsTheLead(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	fast := func(o *agent.Options) { o.LeaderPing, o.LeaderTimeout = 100*time.Millisecond, 2500*time.Millisecond }
	_, firstLogs := startAgentWith(t, fakeclock.New(t0), fast, db)
	if !firstLogs.wait(t, 1, agent.EventActive, 10*time.Second) {
		t.Fatal("the first agent does not lead")
	}
	_, secondLogs := startAgentWith(t, fakeclock.New(t0), fast, db)
	ctx := context.Background()
	var epoch int64
	var answers []time.Time
	if !eventually(t, 20*time.Second, "the leader to answer pings for twice the standby's timeout", func() bool {
		var answered *time.Time
		if err := db.conn.QueryRow(ctx, "SELECT epoch, answered FROM pgjobs.pgj_leader_").Scan(&epoch, &answered); err != nil {
			t.Fatal(err)
		}
		if answered != nil && (len(answers) == 0 || answered.After(answers[len(answers)-1])) {
			answers = append(answers, *answered)
		}
		return len(answers) > 1 && answers[len(answers)-1].Sub(answers[0]) > 5*time.Second
	}) {
		t.Fatalf("answers %v\nfirst:\n%s\nsecond:\n%s", answers, firstLogs, secondLogs)
	}
	if strings.Contains(secondLogs.String(), "taking") || epoch != 1 {
		t.Fatalf("the standby took the lead from a live leader (epoch %d):\n%s", epoch, secondLogs)
	}
}

// TestQueuedLockOnTheAgentsTablesIsEnded: alice keeps a transaction open on a pgjobs view and, in
// another session, asks for a lock PostgreSQL takes before it checks her privileges (CREATE RULE on
// the agent's table); every statement of the agent would queue behind it. The agent ends that
// session, says so, and fires.
func TestQueuedLockOnTheAgentsTablesIsEnded(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	db.exec(t, "SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Tick', 'note(''Tick'')', null, 'At01')")
	ctx := context.Background()
	clock := fakeclock.New(t0)
	_, logs := startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	reader, err := cluster.ConnectAs(t, db.name, alice).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	if _, err := reader.Exec(ctx, "SELECT count(*) FROM pgj_jobs"); err != nil {
		t.Fatal(err)
	}
	ruler := cluster.ConnectAs(t, db.name, alice)
	queued := make(chan error, 1)
	go func() {
		_, err := ruler.Exec(ctx, "CREATE RULE r AS ON INSERT TO pgjobs.pgj_fire_ DO INSTEAD NOTHING")
		queued <- err
	}()
	if !eventually(t, 10*time.Second, "alice's CREATE RULE to wait for its lock", func() bool {
		var waiting int
		err := db.conn.QueryRow(ctx, "SELECT count(*) FROM pg_locks WHERE NOT granted AND pid = $1", ruler.PgConn().PID()).Scan(&waiting)
		return err == nil && waiting > 0
	}) {
		t.Fatal("alice's CREATE RULE does not wait")
	}
	clock.Set(t0.Add(time.Minute))
	// The claim of 10:01 waits behind alice's lock; once the agent has been busy for 2 s, it ends
	// her session, and the claim goes through.
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Tick ok 10:01" {
		t.Fatalf("runs = %v", got)
	}
	if err := <-queued; err == nil {
		t.Fatal("alice's CREATE RULE went through")
	}
	if !logs.wait(t, 1, agent.EventIntruder, 10*time.Second) || !strings.Contains(logs.String(), "of role "+alice+": it held or waited for a lock on the agent's tables") {
		t.Fatalf("no warning naming %s in the log:\n%s", alice, logs)
	}
}
