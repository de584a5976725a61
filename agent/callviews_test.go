package agent_test

import (
	"testing"
	"time"

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
	select {
	case n := <-dropped:
		if n != 2 {
			t.Fatalf("dropped %d views, want 2 (J's former call's, K's)", n)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("no drop of the former views:\n%s", logs.String())
	}
	if exists(first) || exists(k) || !exists(view("J")) {
		t.Fatalf("after the drop: J's former view there %v, K's %v, J's view %v", exists(first), exists(k), exists(view("J")))
	}
}
