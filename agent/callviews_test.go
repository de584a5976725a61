package agent_test

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// TestFormerCallViewsAreDropped: a call set again, and a dropped job, leave their views, which the
// agent drops CallViewsGrace after the reload that brought the change; the views jobs use stay.
func TestFormerCallViewsAreDropped(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_job('J', 'note(''first'')', null, null), pgj_create_job('K', 'note(''K'')', null, null)")
	view := func(job string) string {
		t.Helper()
		var v string
		if err := db.conn.QueryRow(t.Context(), "SELECT jobview FROM pgjobs.pgj_job_ WHERE jobname = $1", job).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	exists := func(v string) bool {
		t.Helper()
		var ok bool
		if err := db.conn.QueryRow(t.Context(), "SELECT to_regclass($1) IS NOT NULL", v).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	first, k := view("J"), view("K")
	dropped := make(chan int, 10)
	_, logs := startAgentWith(t, fakeclock.New(t0), func(o *agent.Options) {
		o.CallViewsGrace = 200 * time.Millisecond
		o.OnCallViewsDropped = func(_, n int) { dropped <- n }
	}, db)
	if !logs.wait(t, 1, agent.EventActive, 10*time.Second) {
		t.Fatalf("the agent did not lead:\n%s", logs.String())
	}
	db.exec(t, "SELECT pgj_update_job('J', null, 'note(''second'')', null), pgj_drop_job('K')")
	waitDropped(t, dropped, 2, logs) // J's former call's, K's
	if exists(first) || exists(k) || !exists(view("J")) {
		t.Fatalf("after the drop: J's former view there %v, K's %v, J's view %v", exists(first), exists(k), exists(view("J")))
	}
}

// TestSweepHasASessionOfItsOwn: a drop of former views that runs long (before schema version 18 a
// role could make a drop of its own former views do so: the DROP walked, uninterruptibly, what the
// role made depend on a view after the sweep checked it) runs on a session of its own, "pgjobsagent N sweep", in the server's
// budget: not on one of the two record sessions, which the runs' records and plans, the upkeep and
// the answers to the standbys need. The runs go on and are recorded meanwhile, and a term that ends
// does not wait for it: the next leads at once, and the drop's statement is cancelled on the
// server, not left running beyond the budget.
func TestSweepHasASessionOfItsOwn(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `SELECT pgj_create_schedule('Every1', 'I 0:01'), pgj_create_job('J', 'note(''first'')', null, null),
		pgj_create_job('Tick', 'note(''Tick'')', null, 'Every1')`)
	// a sweep as long as the longest walk a role made (the fourth review of schema version 17)
	db.exec(t, `CREATE OR REPLACE FUNCTION pgjobs.pgj_call_sweep_(p_views text[], p_budget interval,
			p_each_budget interval DEFAULT '500 ms', p_tidy boolean DEFAULT false, OUT aside int, OUT dropped int, OUT held int,
			OUT deferred int, OUT waiting int, OUT failed int)
		LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(60); aside := 0; dropped := 0; held := 0; deferred := 0; waiting := 0; failed := 0; END $$`)
	clock := fakeclock.New(t0)
	_, logs := startAgentWith(t, clock, func(o *agent.Options) { o.CallViewsGrace = 200 * time.Millisecond }, db)
	if !logs.wait(t, 1, agent.EventActive, 10*time.Second) {
		t.Fatalf("the agent did not lead:\n%s", logs.String())
	}
	db.exec(t, "SELECT pgj_update_job('J', null, 'note(''second'')', null)")
	type sweeper struct {
		App string
		Pid int
	}
	var sweepers []sweeper
	if !eventually(t, 15*time.Second, "the sweep's statement", func() bool {
		rows, _ := db.conn.Query(t.Context(), `SELECT application_name AS app, pid FROM pg_stat_activity
			WHERE datname = current_database() AND state = 'active' AND query LIKE '%pgj_call_sweep_%' AND pid <> pg_backend_pid()`)
		var err error
		if sweepers, err = pgx.CollectRows(rows, pgx.RowToStructByName[sweeper]); err != nil {
			t.Fatal(err)
		}
		return len(sweepers) > 0
	}) {
		t.Fatalf("no sweep ran:\n%s", logs.String())
	}
	if len(sweepers) != 1 || sweepers[0].App != "pgjobsagent 1 sweep" {
		t.Fatalf("the sweep ran on the sessions %v, want one of its own (pgjobsagent 1 sweep)", sweepers)
	}
	tick := func(i int) {
		t.Helper()
		at := t0.Add(time.Duration(i) * time.Minute)
		mustSleepUntil(t, clock, at)
		clock.Set(at)
		db.waitRuns(t, i)
	}
	tick(1)
	tick(2)
	endLeaderSession(t, db) // not the sweep's
	// the pause before the agent connects again
	mustSleepUntil(t, clock, clock.Now().Add(200*time.Millisecond))
	clock.Advance(200 * time.Millisecond)
	if !eventually(t, 10*time.Second, "a second term", func() bool { return logs.count(1, agent.EventActive) == 2 }) {
		t.Fatalf("the agent did not lead again during the sweep:\n%s", logs.String())
	}
	// The term that ended cancelled its drop (pgx sends the server a cancel request when it closes
	// a session mid-statement): the backend does not go on with the minute-long statement, outside
	// the budget, once its session is given back.
	if !eventually(t, 10*time.Second, "the first term's drop ended", func() bool {
		var left bool
		if err := db.conn.QueryRow(t.Context(), "SELECT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)", sweepers[0].Pid).Scan(&left); err != nil {
			t.Fatal(err)
		}
		return !left
	}) {
		t.Fatalf("the drop of the term that ended still runs on the server (pid %d)", sweepers[0].Pid)
	}
	tick(3)
}

// TestSmallBudgetStillDrops: with a budget that has no session for the drop's own (4: the leader's,
// two for the history, one for runs), the former views are dropped all the same, on a history
// session (the code review of the drop's own session: they piled up for good).
func TestSmallBudgetStillDrops(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_job('J', 'note(''first'')', null, null)")
	dropped := make(chan int, 10)
	_, logs := startAgentWith(t, fakeclock.New(t0), func(o *agent.Options) {
		o.Sessions = 4
		o.CallViewsGrace = 200 * time.Millisecond
		o.OnCallViewsDropped = func(_, n int) { dropped <- n }
	}, db)
	if !logs.wait(t, 1, agent.EventActive, 10*time.Second) {
		t.Fatalf("the agent did not lead:\n%s", logs.String())
	}
	db.exec(t, "SELECT pgj_update_job('J', null, 'note(''second'')', null)")
	waitDropped(t, dropped, 1, logs)
}

// waitDropped waits until the drops reported on dropped (Options.OnCallViewsDropped) add up to
// want: at the first round, or at a later one when a transaction was open when the views were set
// aside. More than want fails the test.
func waitDropped(t *testing.T, dropped <-chan int, want int, logs *agentOutput) {
	t.Helper()
	for total := 0; total < want; {
		select {
		case n := <-dropped:
			if total += n; total > want {
				t.Fatalf("dropped %d views, want %d", total, want)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("dropped %d views of %d:\n%s", total, want, logs.String())
		}
	}
}
