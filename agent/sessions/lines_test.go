package sessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent/sessions"
)

// Sessions stay with the line that uses them: of two databases of one owner, each with a backlog,
// the one holding more sessions gives a released session to its own next run rather than close it
// for the other, whose backlog is shorter than a new session's worth (8 to 12 sessions opened a
// minute with 1,000 runs due over 10 databases, and a slower p99). Once the other's first run has
// waited OldestAfter, it closes the next session given back and opens its own.
func TestBusyLinesKeepTheirSessions(t *testing.T) {
	t.Parallel()
	b := sessions.NewBudget(5) // alice may hold 4
	b.OldestAfter = 300 * time.Millisecond
	alice, p1, p2, _ := twoDatabases(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var s1 []*sessions.Session
	for range 3 {
		s1 = append(s1, got(t, acquire(t, ctx, p1, alice), "db1"))
	}
	s2 := got(t, acquire(t, ctx, p2, alice), "db2")
	var q1, q2 []<-chan *sessions.Session
	for range 3 {
		q1 = append(q1, acquire(t, ctx, p1, alice))
		q2 = append(q2, acquire(t, ctx, p2, alice))
	}
	// db1 holds 3, db2 1: db1's release goes to db1's next run, on the same session.
	pid := s1[0].PID
	s1[0].Release()
	next := got(t, q1[0], "db1's line after its own release")
	if next.PID != pid {
		t.Errorf("db1's next run got session %d, want the one its line just released (%d)", next.PID, pid)
	}
	select {
	case s := <-q2[0]:
		t.Fatalf("db2's run got session %d at once: db1's session was closed for it", s.PID)
	default:
	}
	// db2's first run has waited past OldestAfter: db1's next release is closed for it.
	time.Sleep(b.OldestAfter)
	s1[1].Release()
	moved := got(t, q2[0], "db2's line once its run waited past OldestAfter")
	for _, x := range []*sessions.Session{s2, next, s1[2], moved} {
		x.Release()
	}
	for _, q := range append(q1[1:], q2[1:]...) {
		got(t, q, "the rest").Release()
	}
}

// A session idle in a database whose runs are done moves to a database whose runs still wait,
// once it has been idle for the time a session takes to open (its own database's next run would
// have taken it by then).
func TestSessionsMoveToTheLineThatWaits(t *testing.T) {
	t.Parallel()
	alice, p1, p2, _ := twoDatabases(t, sessions.NewBudget(4)) // alice may hold 3
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s1 := []*sessions.Session{got(t, acquire(t, ctx, p1, alice), "db1"), got(t, acquire(t, ctx, p1, alice), "db1")}
	s2 := got(t, acquire(t, ctx, p2, alice), "db2")
	var q2 []<-chan *sessions.Session
	for range 3 {
		q2 = append(q2, acquire(t, ctx, p2, alice))
	}
	// db1: 2 held, none waiting; db2: 1 held, 3 waiting.
	pid := s1[0].PID
	s1[0].Release()
	moved := got(t, q2[0], "db2's line, waiting while db1's session was idle")
	if moved.PID == pid {
		t.Errorf("db2's run got db1's session %d, want one of its own database", pid)
	}
	moved.Release()
	s1[1].Release()
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
