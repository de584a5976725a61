package sessions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// When the server refuses sessions (other clients took its connection slots), a run waits and
// tries again instead of failing, and starts once a slot is free.
func TestRefusedSessionIsRetried(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	small, err := pgtest.StartWith(ctx, pgtest.Settings{MaxConnections: 8}) // 5 for ordinary roles
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { small.Close() }) // last: after the cleanups of its roles and database
	if !small.Own() {
		t.Skip("the tests use an existing server, whose max_connections is its own")
	}
	db := small.NewDatabase(t)
	alice, other := small.NewRole(t, "alice", db), small.NewRole(t, "other", db)
	hogs := small.TakeEverySlot(t, db, other)
	b := sessions.NewBudget(4) // the budget has room, the server has not
	p := b.NewPool(context.Background(), 4, opener(small, db))
	defer p.Close()

	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	var granted, refused int // a run is told it waits again after each refusal
	_, err = p.Acquire(short, alice, sessions.Hooks{Granted: func() { granted++ }, Refused: func() { refused++ }})
	stop()
	if err == nil || !sessions.Refused(err) || !strings.Contains(err.Error(), "the server refused new sessions") {
		t.Fatalf("Acquire while the server is full = %v, want the refusal", err)
	}
	if granted == 0 || refused != granted {
		t.Fatalf("granted %d times, refused %d times: each refusal must be told", granted, refused)
	}
	got := make(chan error, 1)
	go func() {
		s, err := p.Acquire(ctx, alice, sessions.Hooks{})
		if err == nil {
			s.Release()
		}
		got <- err
	}()
	hogs[0].Close(ctx) // a slot frees
	if err := <-got; err != nil {
		t.Fatalf("Acquire after a slot freed: %v", err)
	}
}

// A role that reaches its own connection limit pauses only its own runs: another role's run gets a
// session at once, not after the first role's back-off (the attacker review: it was up to 1 s).
func TestRoleConnectionLimitPausesOnlyThatRole(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db := cluster.NewDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	admin := cluster.Connect(t, db)
	if _, err := admin.Exec(ctx, "ALTER ROLE "+pgx.Identifier{alice}.Sanitize()+" CONNECTION LIMIT 1"); err != nil {
		t.Fatal(err)
	}
	refusals := make(chan struct{}, 64)
	open := opener(cluster, db)
	b := sessions.NewBudget(8)
	p := b.NewPool(context.Background(), 8, func(ctx context.Context, owner string) (*pgx.Conn, time.Time, error) {
		conn, start, err := open(ctx, owner)
		if sessions.Refused(err) {
			select {
			case refusals <- struct{}{}:
			default:
			}
		}
		return conn, start, err
	})
	defer p.Close()
	first := got(t, acquire(t, ctx, p, alice), "alice's first run")
	defer first.Release()
	second := acquire(t, ctx, p, alice) // refused by her limit, again and again
	for range 6 {                       // her pause grows to 320 ms or more
		select {
		case <-refusals:
		case s := <-second:
			t.Fatalf("alice got a second session (%v) past her connection limit", s)
		case <-time.After(10 * time.Second):
			t.Fatal("alice's second run was not refused by her connection limit")
		}
	}
	s, err := p.Acquire(ctx, bob, sessions.Hooks{Waiting: func(int) { t.Error("bob's run waited out alice's pause") }})
	if err != nil {
		t.Fatal(err)
	}
	s.Release()
}
