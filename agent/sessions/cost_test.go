package sessions_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent/sessions"
)

// A run whose line holds a session already waits for it rather than close another database's idle
// session to open one, when its line's runs are done sooner than a session opens; once it has
// waited OldestAfter, or twice the time a session takes to open with none of its line's sessions
// given back (held by a long run), it closes the idle one.
func TestNoSessionMovesForWorkDoneBeforeItOpens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		oldestAfter time.Duration
		moves       bool
	}{
		{"short work waits for its own session", time.Hour, false},
		{"a run waiting past OldestAfter closes the idle session", 50 * time.Millisecond, true},
		{"a run whose line's session does not come back closes the idle one", time.Hour, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := sessions.NewBudget(3) // alice may hold 2
			b.OldestAfter = tc.oldestAfter
			// Opening a session takes at least 250 ms; a run holds one for a reset's round trip.
			alice, p1, p2 := slowDatabases(t, b, 250*time.Millisecond)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()

			got(t, acquire(t, ctx, p1, alice), "db1's first run").Release() // its hold is measured
			s1 := got(t, acquire(t, ctx, p1, alice), "db1's second run")
			s2 := got(t, acquire(t, ctx, p2, alice), "db2's run")
			idle2 := s2.PID
			s2.Release() // alice holds 2: db1's next run opens one only by closing db2's idle one
			q := acquire(t, ctx, p1, alice)
			if tc.moves {
				s := got(t, q, "db1's run after OldestAfter")
				if s.PID == s1.PID {
					t.Errorf("db1's run got the session of its line's running run %d", s1.PID)
				}
				s.Release()
				s1.Release()
				return
			}
			select {
			case s := <-q:
				t.Fatalf("db1's run got session %d at once, want it to wait for its line's session %d", s.PID, s1.PID)
			default:
			}
			pid := s1.PID
			s1.Release()
			if s := got(t, q, "db1's waiting run"); s.PID != pid {
				t.Errorf("db1's run got session %d, want its line's own %d", s.PID, pid)
			} else {
				s.Release()
			}
			if s := got(t, acquire(t, ctx, p2, alice), "db2's next run"); s.PID != idle2 {
				t.Errorf("db2's idle session %d was closed for db1: db2's next run got %d", idle2, s.PID)
			} else {
				s.Release()
			}
		})
	}
}

// A run that reaches the front of its line after the timers of the runs before it have fired is
// still served once moving is worth it (the independent review's finding: it waited for an
// unrelated event, minutes at worst).
func TestHeldBackRunBehindAnotherIsServed(t *testing.T) {
	t.Parallel()
	b := sessions.NewBudget(3) // alice may hold 2
	b.OldestAfter = 300 * time.Millisecond
	alice, p1, p2 := slowDatabases(t, b, 100*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	got(t, acquire(t, ctx, p1, alice), "db1's first run").Release() // its hold is measured
	s1 := got(t, acquire(t, ctx, p1, alice), "db1's long run")
	s2 := got(t, acquire(t, ctx, p2, alice), "db2's run")
	q1 := acquire(t, ctx, p1, alice)
	time.Sleep(2 * b.OldestAfter) // q1's timer fires with nothing to move: alice holds all she may
	q2 := acquire(t, ctx, p1, alice)
	s1.Release() // to q1, the front of db1's line; q2 is now the front
	first := got(t, q1, "db1's first waiting run")
	defer first.Release()
	s2.Release() // idle in db2: q2 may close it once it has waited OldestAfter
	select {
	case s := <-q2:
		s.Release()
	case <-time.After(10 * time.Second):
		t.Fatal("a run that came to the front of its line after the timers of the run before it was not served")
	}
}

// slowDatabases returns alice and the pools of two new databases in b whose sessions take at least
// opening to open; the pools close when the test ends.
func slowDatabases(t *testing.T, b *sessions.Budget, opening time.Duration) (alice string, p1, p2 *sessions.Pool) {
	t.Helper()
	db1, db2 := cluster.NewDatabase(t), cluster.NewDatabase(t)
	alice = cluster.NewRole(t, "alice", db1)
	slow := func(o sessions.Opener) sessions.Opener {
		return func(ctx context.Context, owner string) (*pgx.Conn, time.Time, error) {
			time.Sleep(opening)
			return o(ctx, owner)
		}
	}
	p1 = b.NewPool(context.Background(), 32, slow(opener(cluster, db1)))
	p2 = b.NewPool(context.Background(), 32, slow(opener(cluster, db2)))
	t.Cleanup(p1.Close)
	t.Cleanup(p2.Close)
	return alice, p1, p2
}

// Sessions another owner has just given back are closed for a run of an owner who holds fewer, at
// once: neither the rule that keeps a session for its own line a moment (awaited) nor what a move
// costs keeps bob's run waiting for alice's (the review's findings: bob, holding one session busy
// with a long run, waited OldestAfter for his second).
func TestOwnerHoldingFewerClosesAnothersIdleSession(t *testing.T) {
	t.Parallel()
	for _, measured := range []bool{false, true} {
		t.Run(fmt.Sprintf("bob's hold measured: %v", measured), func(t *testing.T) {
			t.Parallel()
			b := sessions.NewBudget(4) // an owner may hold 3
			b.OldestAfter = time.Hour
			dbX, dbY := cluster.NewDatabase(t), cluster.NewDatabase(t)
			alice, bob := cluster.NewRole(t, "alice", dbY), cluster.NewRole(t, "bob", dbX)
			pX := b.NewPool(context.Background(), 32, opener(cluster, dbX))
			// Alice's logins are slow (she can make them so): the average time to open a session,
			// and so how long a session given back counts as awaited by its line, grows to about 1 s.
			aliceOpener := opener(cluster, dbY)
			pY := b.NewPool(context.Background(), 32, func(ctx context.Context, owner string) (*pgx.Conn, time.Time, error) {
				time.Sleep(3 * time.Second)
				return aliceOpener(ctx, owner)
			})
			t.Cleanup(pX.Close)
			t.Cleanup(pY.Close)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if measured {
				got(t, acquire(t, ctx, pX, bob), "bob's short run").Release() // a hold of about nothing
			}
			long := got(t, acquire(t, ctx, pX, bob), "bob's long run")
			defer long.Release()
			var runs []<-chan *sessions.Session
			for range 3 {
				runs = append(runs, acquire(t, ctx, pY, alice))
			}
			for _, q := range runs {
				got(t, q, "alice's run").Release() // the budget is full: bob's long run and alice's 3 idle sessions
			}
			asked := time.Now()
			s := got(t, acquire(t, ctx, pX, bob), "bob's second run")
			s.Release()
			if waited := time.Since(asked); waited > 600*time.Millisecond {
				t.Errorf("bob's second run waited %s for alice's idle sessions", waited.Round(time.Millisecond))
			}
		})
	}
}
