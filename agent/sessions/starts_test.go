package sessions_test

import (
	"context"
	"testing"
	"time"
)

// TestStartingRunsAreCapped: at most StartingMax runs are starting at once; a run that gives its
// session back, or that has gone on for StartingFor, no longer counts, and the next run in line
// starts.
func TestStartingRunsAreCapped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("a session given back lets the next run start", func(t *testing.T) {
		t.Parallel()
		alice, b, p := onePool(t, 10, 10)
		b.StartingMax, b.StartingFor = 2, time.Hour
		first, second := <-acquire(t, ctx, p, alice), <-acquire(t, ctx, p, alice)
		if first == nil || second == nil {
			t.Fatal("the first two runs did not start at once")
		}
		third := acquire(t, ctx, p, alice) // returns once it waits in line, or has its session
		if _, _, waiting := b.Use(); waiting != 1 {
			t.Fatalf("%d runs wait in line, want the third while two are starting", waiting)
		}
		first.Release()
		select {
		case s := <-third:
			s.Release()
		case <-time.After(10 * time.Second):
			t.Fatal("the third run did not start once a session was given back")
		}
		second.Release()
	})
	t.Run("a run going on past StartingFor lets the next run start", func(t *testing.T) {
		t.Parallel()
		alice, b, p := onePool(t, 10, 10)
		// OldestAfter: no other timer serves the line again meanwhile.
		b.StartingMax, b.StartingFor, b.OldestAfter = 1, 300*time.Millisecond, time.Hour
		long := <-acquire(t, ctx, p, alice)
		asked := time.Now()
		next := acquire(t, ctx, p, alice)
		select {
		case s := <-next:
			// The long run's session is open: it counts for StartingFor from then, so the next
			// run waited for most of it.
			if waited := time.Since(asked); waited < 200*time.Millisecond {
				t.Fatalf("the next run started after %s, beside a run still starting", waited)
			}
			s.Release()
		case <-time.After(10 * time.Second):
			t.Fatal("the next run did not start beside the long one")
		}
		if _, _, waiting := b.Use(); waiting != 0 {
			t.Fatalf("%d runs still wait", waiting)
		}
		long.Release()
	})
	t.Run("sessions warmed ahead count once their runs have them", func(t *testing.T) {
		t.Parallel()
		alice, b, p := onePool(t, 10, 10)
		b.StartingMax, b.StartingFor = 2, time.Hour
		p.Warm(ctx, alice, 3) // three idle sessions of alice: opening them counts as no start
		first, second := <-acquire(t, ctx, p, alice), <-acquire(t, ctx, p, alice)
		if first == nil || second == nil {
			t.Fatal("the first two runs did not start at once on warmed sessions")
		}
		third := acquire(t, ctx, p, alice)
		if _, _, waiting := b.Use(); waiting != 1 {
			t.Fatalf("%d runs wait in line, want the third while two are starting on warmed sessions", waiting)
		}
		second.Release()
		select {
		case s := <-third:
			s.Release()
		case <-time.After(10 * time.Second):
			t.Fatal("the third run did not start once a session was given back")
		}
		first.Release()
	})
}
