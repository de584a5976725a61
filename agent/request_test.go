package agent_test

import (
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// TestRequestRunsTheJobAsChanged: an owner who sets a job's call and asks for a run at once gets
// the call just set, though the agent reloads its jobs at most once a second: the request waits
// for the reload of the change notified before it. (The attacker review of schema version 9 saw a
// request run a call two changes old.)
func TestRequestRunsTheJobAsChanged(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_job('J', 'note(''first'')', null, null)")
	reloaded := make(chan int, 10)
	_, logs := startAgentWith(t, fakeclock.New(t0), func(o *agent.Options) { o.OnReload = func(id int) { reloaded <- id } }, db)
	if !logs.wait(t, 1, agent.EventActive, 10*time.Second) {
		t.Fatalf("the agent did not lead:\n%s", logs.String())
	}
	db.exec(t, "SELECT pgj_update_job('J', null, 'note(''second'')', null)")
	select {
	case <-reloaded:
	case <-time.After(10 * time.Second):
		t.Fatalf("no reload after the change:\n%s", logs.String())
	}
	// Within a second of that reload: this change's reload is due a moment later, and the request
	// comes before it.
	db.exec(t, "SELECT pgj_update_job('J', null, 'note(''third'')', null)")
	db.exec(t, "SELECT pgj_run_job('J')")
	db.waitRuns(t, 1)
	if got := calls(t, db); got != "third" {
		t.Fatalf("the requested run called %q, want the call set last (third)", got)
	}
}

// TestRequestAfterAChangeThatKeepsThePlan: a change that keeps the job's plan (its time limit, its
// name) gives the job's row a new version all the same; the agent takes that version with the
// reload, so that a request after it runs (it would wait for ever for a reload bringing a version
// the agent kept the old one of).
func TestRequestAfterAChangeThatKeepsThePlan(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, "SELECT pgj_create_job('J', 'note(''J'')', null, null)")
	reloaded := make(chan int, 10)
	_, logs := startAgentWith(t, fakeclock.New(t0), func(o *agent.Options) { o.OnReload = func(id int) { reloaded <- id } }, db)
	if !logs.wait(t, 1, agent.EventActive, 10*time.Second) {
		t.Fatalf("the agent did not lead:\n%s", logs.String())
	}
	for _, change := range []string{"SELECT pgj_pause_job('J')", "SELECT pgj_resume_job('J')", // the job as loaded first, replanned
		"SELECT pgj_set_job_timeout('J', '1 hour'), pgj_update_job('J', 'Renamed', null, null)"} { // the same plan
		db.exec(t, change)
		select {
		case <-reloaded:
		case <-time.After(10 * time.Second):
			t.Fatalf("no reload after %s:\n%s", change, logs.String())
		}
	}
	db.exec(t, "SELECT pgj_run_job('Renamed')")
	db.waitRuns(t, 1)
	if got := calls(t, db); got != "J" {
		t.Fatalf("the requested run called %q", got)
	}
}
