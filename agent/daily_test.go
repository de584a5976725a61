package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// TestPausedJobFiresNothingAndMissesNothing: a paused job keeps its schedules; its fires are
// neither run nor recorded as missed, also by an agent that starts while it is paused; resumed, it
// fires from then on. Done as an ordinary role, on its own job.
func TestPausedJobFiresNothingAndMissesNothing(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	ctx := context.Background()
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	// Fires at minutes 1 to 6 of the hour (date schedules: an agent that takes over keeps them).
	if _, err := aliceConn.Exec(ctx, `SELECT pgj_create_job('Tick', 'note(''Tick'')', null, null), pgj_create_job('Other', 'note(''Other'')', null, null);
		SELECT pgj_create_schedule('M' || m, 'D 0' || m), pgj_add_job_schedule('Tick', 'M' || m), pgj_add_job_schedule('Other', 'M' || m)
		FROM generate_series(1, 6) m`); err != nil {
		t.Fatal(err)
	}
	reloaded := make(chan int, 10)
	onReload := func(o *agent.Options) { o.OnReload = func(id int) { reloaded <- id } }
	clock := fakeclock.New(t0)
	first, _ := startAgentWith(t, clock, onReload, db)
	fireAt(t, db, clock, t0.Add(time.Minute), 2)
	if _, err := aliceConn.Exec(ctx, "SELECT pgj_pause_job('Tick')"); err != nil {
		t.Fatal(err)
	}
	<-reloaded
	var paused bool
	var next *time.Time
	if err := aliceConn.QueryRow(ctx, "SELECT paused, next_run FROM pgj_jobs WHERE name = 'Tick'").Scan(&paused, &next); err != nil || !paused || next != nil {
		t.Fatalf("pgj_jobs of the paused job: paused %v, next_run %v, %v", paused, next, err)
	}
	fireAt(t, db, clock, t0.Add(2*time.Minute), 3) // Other only
	first.Stop(5 * time.Second)
	// An agent that starts at 10:05:30 records Other's missed fires, none of Tick's.
	clock2 := fakeclock.New(t0.Add(5*time.Minute + 30*time.Second))
	startAgentWith(t, clock2, onReload, db)
	db.waitRuns(t, 4)
	if _, err := aliceConn.Exec(ctx, "SELECT pgj_resume_job('Tick')"); err != nil {
		t.Fatal(err)
	}
	<-reloaded
	got := fireAt(t, db, clock2, t0.Add(6*time.Minute), 6)
	want := []string{"Other missed 10:05", "Other ok 10:01", "Other ok 10:02", "Other ok 10:06", "Tick ok 10:01", "Tick ok 10:06"}
	if slices.Sort(got); !slices.Equal(got, want) {
		t.Fatalf("runs = %q, want %q", got, want)
	}
}

// TestJobTimeLimit: a run over its job's time limit is cancelled and recorded as failed, saying so.
func TestJobTimeLimit(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `SELECT pgj_create_startup_job('Slow', 'slow(''Slow'', 30)'), pgj_set_job_timeout('Slow', '1 second')`)
	startAgent(t, fakeclock.New(t0), db)
	if got := db.waitRuns(t, 1); strings.Join(got, ";") != "Slow error startup 57014" {
		t.Fatalf("runs = %v", got)
	}
	var message, hint string
	if err := db.conn.QueryRow(context.Background(), "SELECT message, hint FROM pgj_runs").Scan(&message, &hint); err != nil {
		t.Fatal(err)
	}
	if message != "the run took longer than the job's time limit of 1s and was cancelled" || !strings.Contains(hint, "pgj_set_job_timeout('Slow'") {
		t.Fatalf("message %q, hint %q", message, hint)
	}
	if c := calls(t, db); c != "" {
		t.Fatalf("the slow call finished: %q", c)
	}
}
