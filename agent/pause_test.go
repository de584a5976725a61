package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// The review of pause and resume (docs/security.md): made by ordinary LOGIN roles.

// TestOpenPauseDelaysNoOtherFire: alice pauses her job in a transaction she leaves open; bob's job
// of the same minute fires on time: pausing writes only alice's own job row, which no statement of
// the agent waits for.
func TestOpenPauseDelaysNoOtherFire(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	bob := cluster.NewRole(t, "bob", db.name)
	ctx := context.Background()
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	if _, err := aliceConn.Exec(ctx, `SELECT pgj_create_schedule('AliceMin', 'I 0:01'), pgj_create_job('AliceJob', 'note(''alice'')', null, 'AliceMin')`); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ConnectAs(t, db.name, bob).Exec(ctx, `SELECT pgj_create_schedule('BobMin', 'I 0:01'), pgj_create_job('BobJob', 'note(''bob'')', null, 'BobMin')`); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	_, logs := startAgent(t, clock, db)
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	tx, err := aliceConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pgj_pause_job('AliceJob')"); err != nil {
		t.Fatal(err)
	}
	got := fireAt(t, db, clock, t0.Add(time.Minute), 2)
	if strings.Join(got, ";") != "AliceJob ok 10:01;BobJob ok 10:01" && strings.Join(got, ";") != "BobJob ok 10:01;AliceJob ok 10:01" {
		t.Fatalf("runs = %v", got)
	}
	if strings.Contains(logs.String(), "lock timeout") || strings.Contains(logs.String(), "ended session") {
		t.Fatalf("the agent waited on alice's open pause:\n%s", logs)
	}
}

// TestResumeKeepsTheClaimedFire: a job paused and resumed right after its 10:01 fire ran; an agent
// starting within a second of that fire does not run it again, and counts no fire of the pause as
// missed.
func TestResumeKeepsTheClaimedFire(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	alice := cluster.NewRole(t, "alice", db.name)
	ctx := context.Background()
	aliceConn := cluster.ConnectAs(t, db.name, alice)
	if _, err := aliceConn.Exec(ctx, `SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_schedule('At02', 'D 02'),
		pgj_create_job('Tick', 'note(''Tick'')', null, 'At01'), pgj_add_job_schedule('Tick', 'At02')`); err != nil {
		t.Fatal(err)
	}
	clock := fakeclock.New(t0)
	first, _ := startAgent(t, clock, db)
	fireAt(t, db, clock, t0.Add(time.Minute), 1)
	first.Stop(5 * time.Second)
	if _, err := aliceConn.Exec(ctx, "SELECT pgj_pause_job('Tick'), pgj_resume_job('Tick')"); err != nil {
		t.Fatal(err)
	}
	clock2 := fakeclock.New(t0.Add(time.Minute + 500*time.Millisecond))
	startAgent(t, clock2, db)
	if got := fireAt(t, db, clock2, t0.Add(2*time.Minute), 2); strings.Join(got, ";") != "Tick ok 10:01;Tick ok 10:02" {
		t.Fatalf("runs = %v: the 10:01 fire ran twice, or one was missed", got)
	}
}
