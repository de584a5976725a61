package sessions_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent/sessions"
)

// counted is o counting the sessions it opens in n.
func counted(o sessions.Opener, n *atomic.Int32) sessions.Opener {
	return func(ctx context.Context, owner string) (*pgx.Conn, time.Time, error) {
		n.Add(1)
		return o(ctx, owner)
	}
}

// twoDatabases returns alice and the pools of two new databases in b, counting the sessions they
// open in opened; the pools close when the test ends.
func twoDatabases(t *testing.T, b *sessions.Budget) (alice string, p1, p2 *sessions.Pool, opened *atomic.Int32) {
	t.Helper()
	db1, db2 := cluster.NewDatabase(t), cluster.NewDatabase(t)
	alice = cluster.NewRole(t, "alice", db1)
	opened = &atomic.Int32{}
	p1 = b.NewPool(context.Background(), 32, counted(opener(cluster, db1), opened))
	p2 = b.NewPool(context.Background(), 32, counted(opener(cluster, db2), opened))
	t.Cleanup(p1.Close)
	t.Cleanup(p2.Close)
	return alice, p1, p2, opened
}

// Warming ahead of a fire moves idle sessions from a database holding more than its share of the
// budget to one holding fewer, so that neither opens a session at the minute.
func TestWarmMovesIdleSessionsToTheirShare(t *testing.T) {
	t.Parallel()
	b := sessions.NewBudget(6) // alice may hold 5; an even share is 3 a database
	alice, p1, p2, opened := twoDatabases(t, b)
	ctx := context.Background()
	var held []*sessions.Session
	for range 5 {
		held = append(held, got(t, acquire(t, ctx, p1, alice), "db1"))
	}
	for _, s := range held {
		s.Release() // db1 holds 5 idle: over its share
	}
	p2.Warm(ctx, alice, 5)
	// db2 takes db1's sessions over its share; alice's limit keeps the last for other owners.
	if n := opened.Load(); n != 7 {
		t.Fatalf("%d sessions opened, want 5 for db1 and 2 warmed for db2", n)
	}
	// Both databases' runs now find their sessions open: none waits, none opens one.
	var runs []*sessions.Session
	for _, p := range []*sessions.Pool{p1, p2} {
		for range 2 {
			s, err := p.Acquire(ctx, alice, sessions.Hooks{Waiting: func(int) { t.Error("a run waited after warming") }})
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, s)
		}
	}
	if n := opened.Load(); n != 7 {
		t.Errorf("%d sessions opened at the minute, want none after warming", n-7)
	}
	for _, s := range runs {
		s.Release()
	}
}

// A session warmed for a fire is kept for it: another database's run of the same minute waits
// rather than closing it.
func TestWarmedSessionIsKeptForItsFire(t *testing.T) {
	t.Parallel()
	b := sessions.NewBudget(3) // alice may hold 2
	alice, p1, p2, opened := twoDatabases(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p1.Warm(ctx, alice, 1)
	first := got(t, acquire(t, ctx, p2, alice), "db2's first run")
	second := acquire(t, ctx, p2, alice) // alice holds 2: this one may only close db1's warmed session
	if n := opened.Load(); n != 2 {
		t.Fatalf("%d sessions opened, want the warmed one and db2's first", n)
	}
	s1, err := p1.Acquire(ctx, alice, sessions.Hooks{Waiting: func(int) { t.Error("db1's fire waited: its warmed session was taken") }})
	if err != nil {
		t.Fatal(err)
	}
	if n := opened.Load(); n != 2 {
		t.Errorf("%d sessions opened, want none after warming", n)
	}
	s1.Release()
	first.Release()
	got(t, second, "db2's second run, after a release").Release()
}

// A session warmed for a fire that did not take it (its job was dropped meanwhile, say) goes to a
// run waiting for room once it is no longer kept.
func TestUnusedWarmedSessionIsFreedWhenNoLongerKept(t *testing.T) {
	t.Parallel()
	b := sessions.NewBudget(1)
	b.KeepWarmed = 300 * time.Millisecond
	alice, p1, p2, _ := twoDatabases(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p1.Warm(ctx, alice, 1)
	waiting := acquire(t, ctx, p2, alice) // the budget's one session is db1's, kept
	select {
	case s := <-waiting:
		t.Fatalf("db2's run took session %d while db1's fire kept it", s.PID)
	default:
	}
	got(t, waiting, "db2's run once db1's warmed session is no longer kept").Release()
}

// Warming shares the budget evenly between the pools that warm: a pool that never warms (tasks')
// takes no share, and a pool that warms after the others still gets the share rounded down,
// rather than the first ones taking the share rounded up and leaving it none.
func TestWarmingSharesTheBudgetEvenly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		size            int // alice may hold one fewer
		warming, others int
		want            int // each warming pool's sessions
	}{
		{"the last to warm gets its share", 7, 3, 0, 2},
		{"pools that never warm take no share", 9, 2, 2, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := sessions.NewBudget(tc.size)
			db := cluster.NewDatabase(t)
			alice := cluster.NewRole(t, "alice", db)
			for range tc.others {
				p := b.NewUnwarmedPool(context.Background(), 32, opener(cluster, db))
				t.Cleanup(p.Close)
			}
			var pools []*sessions.Pool
			var opened []*atomic.Int32
			for range tc.warming {
				n := &atomic.Int32{}
				p := b.NewPool(context.Background(), 32, counted(opener(cluster, cluster.NewDatabase(t)), n))
				t.Cleanup(p.Close)
				pools, opened = append(pools, p), append(opened, n)
			}
			for _, p := range pools {
				p.Warm(context.Background(), alice, 10)
			}
			for i, n := range opened {
				if got := int(n.Load()); got != tc.want {
					t.Errorf("pool %d of %d warmed %d sessions, want %d", i+1, len(pools), got, tc.want)
				}
			}
		})
	}
}

// Warming opens no more sessions than runs may start at once: a session beyond serves a run only
// once another has started, which a warmed session of the line serves as well.
func TestWarmOpensNoMoreThanMayStart(t *testing.T) {
	t.Parallel()
	b := sessions.NewBudget(20)
	b.StartingMax = 3
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	opened := &atomic.Int32{}
	p := b.NewPool(context.Background(), 32, counted(opener(cluster, db), opened))
	t.Cleanup(p.Close)
	p.Warm(context.Background(), alice, 10)
	if n := opened.Load(); n != 3 {
		t.Errorf("warming for 10 runs, 3 of which may start at once, opened %d sessions, want 3", n)
	}
}

// A pool below its share warms while the budget has room, whatever the other pools lack: one pool
// holding more than its share (alice's long runs) does not keep another from warming (the review's
// finding: bob's pool warmed nothing with 6 of 12 sessions free).
func TestWarmBelowShareWhileTheBudgetHasRoom(t *testing.T) {
	t.Parallel()
	b := sessions.NewBudget(12) // 4 pools warm: a share of 3 each
	dbA, dbB := cluster.NewDatabase(t), cluster.NewDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", dbA), cluster.NewRole(t, "bob", dbB)
	pA := b.NewPool(context.Background(), 32, opener(cluster, dbA))
	opened := &atomic.Int32{}
	pB := b.NewPool(context.Background(), 32, counted(opener(cluster, dbB), opened))
	t.Cleanup(pA.Close)
	t.Cleanup(pB.Close)
	for range 2 {
		p := b.NewPool(context.Background(), 32, opener(cluster, cluster.NewDatabase(t)))
		t.Cleanup(p.Close)
	}
	ctx := context.Background()
	for range 6 {
		s := got(t, acquire(t, ctx, pA, alice), "alice's long run")
		defer s.Release()
	}
	pB.Warm(ctx, bob, 1)
	if n := opened.Load(); n != 1 {
		t.Errorf("bob's pool warmed %d sessions with 6 of 12 free, want 1", n)
	}
}
