package sessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent/sessions"
)

// Sessions stay with the line that uses them: two databases of one owner, each with a backlog,
// share the budget evenly, and a run's session is reused by the next run of its line rather than
// closed for the other line's.
func TestBusyLinesKeepTheirSessions(t *testing.T) {
	t.Parallel()
	alice, p1, p2, _ := twoDatabases(t, sessions.NewBudget(5)) // alice may hold 4
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var s1 []*sessions.Session
	for range 3 {
		s1 = append(s1, got(t, acquire(t, ctx, p1, alice), "db1"))
	}
	s2 := []*sessions.Session{got(t, acquire(t, ctx, p2, alice), "db2")}
	var q1, q2 []<-chan *sessions.Session
	for range 3 {
		q1 = append(q1, acquire(t, ctx, p1, alice))
		q2 = append(q2, acquire(t, ctx, p2, alice))
	}
	// db1 holds 3, db2 1: db1's release goes to db2's line, which holds fewer.
	s1[0].Release()
	s2 = append(s2, got(t, q2[0], "db2's line, holding fewer"))
	// Both hold 2: a release goes back to its own line, on the same session.
	pid := s1[1].PID
	s1[1].Release()
	next := got(t, q1[0], "db1's line after its own release")
	if next.PID != pid {
		t.Errorf("db1's next run got session %d, want the one its line just released (%d)", next.PID, pid)
	}
	for _, x := range append(s2, next, s1[2]) {
		x.Release()
	}
	for _, q := range append(q1[1:], q2[1:]...) {
		got(t, q, "the rest").Release()
	}
}

// A session moves to another database's line when that line waits longer for each session it
// holds, even once the move is made: db1 holds 2 sessions for 1 waiting run, db2 1 for 3. With as
// much work each, a line holding one session fewer keeps it so (TestBusyLinesKeepTheirSessions).
func TestSessionsMoveToTheLineThatWaitsLongest(t *testing.T) {
	t.Parallel()
	alice, p1, p2, _ := twoDatabases(t, sessions.NewBudget(4)) // alice may hold 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s1 := []*sessions.Session{got(t, acquire(t, ctx, p1, alice), "db1"), got(t, acquire(t, ctx, p1, alice), "db1")}
	s2 := got(t, acquire(t, ctx, p2, alice), "db2")
	q1 := acquire(t, ctx, p1, alice)
	var q2 []<-chan *sessions.Session
	for range 3 {
		q2 = append(q2, acquire(t, ctx, p2, alice))
	}
	// db1: 2 held, 1 waiting; db2: 1 held, 3 waiting. After a move, 1 for 1 and 2 for 3.
	s1[0].Release()
	moved := got(t, q2[0], "db2's line, waiting longest")
	// db1: 1 held, 1 waiting; db2: 2 held, 2 waiting: db1's release stays with db1.
	pid := s1[1].PID
	s1[1].Release()
	if next := got(t, q1, "db1's line after its own release"); next.PID != pid {
		t.Errorf("db1's run got session %d, want the one its line released (%d)", next.PID, pid)
	} else {
		next.Release()
	}
	moved.Release()
	s2.Release()
	for _, q := range q2[1:] {
		got(t, q, "the rest").Release()
	}
}

// Quiet is closed while no run waits in line, open while one does, and closed once none does.
func TestQuietWhileNoRunWaits(t *testing.T) {
	t.Parallel()
	alice, b, p := onePool(t, 2, 32) // alice may hold 1
	ctx := context.Background()
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	if !closed(b.Quiet()) {
		t.Fatal("Quiet is open with no run waiting")
	}
	held := got(t, acquire(t, ctx, p, alice), "the session")
	if !closed(b.Quiet()) {
		t.Fatal("Quiet is open with a session lent and no run waiting")
	}
	waiting := acquire(t, ctx, p, alice) // returns once the run waits in line
	quiet := b.Quiet()
	if closed(quiet) {
		t.Fatal("Quiet is closed while a run waits in line")
	}
	held.Release()
	select {
	case <-quiet:
	case <-time.After(10 * time.Second):
		t.Fatal("Quiet stayed open after the waiting run got its session")
	}
	got(t, waiting, "the waiting run").Release()
}

// A database whose only session of alice is busy with a long run, with one more run of alice
// waiting, is not left behind by alice's backlog in another database: once a run has waited past
// OldestAfter, the oldest run goes first (the independent review's finding: before, db2's run
// waited while any number of db1's runs started).
func TestLongRunsLineIsNotLeftBehind(t *testing.T) {
	t.Parallel()
	b := sessions.NewBudget(5) // alice may hold 4
	b.OldestAfter = time.Nanosecond
	alice, p1, p2, _ := twoDatabases(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var s1 []*sessions.Session
	for range 3 {
		s1 = append(s1, got(t, acquire(t, ctx, p1, alice), "db1"))
	}
	long := got(t, acquire(t, ctx, p2, alice), "db2's long run") // held to the end
	defer long.Release()
	var q1 []<-chan *sessions.Session
	for range 10 {
		q1 = append(q1, acquire(t, ctx, p1, alice))
	}
	q2 := acquire(t, ctx, p2, alice)
	for i := range 60 {
		// db1's short runs end one at a time; its backlog stays at 10.
		s1[0].Release()
		s1 = s1[1:]
		select {
		case s := <-q2:
			if i+1 > 11 {
				t.Errorf("db2's run started after %d of db1's runs, want at most the 10 that asked before it", i+1)
			}
			s.Release()
			for _, s := range s1 {
				s.Release()
			}
			return
		case s := <-q1[0]:
			s1 = append(s1, s)
			q1 = append(q1[1:], acquire(t, ctx, p1, alice))
		case <-time.After(10 * time.Second):
			t.Fatal("no run was given a session")
		}
	}
	t.Error("db2's run did not start while 60 of db1's runs did")
}
