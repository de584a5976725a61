package sessions_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

var cluster *pgtest.Cluster

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &cluster)) }

// opener opens sessions of the owners in database of c, as the agent does: a connection as the
// owner and its backend_start.
func opener(c *pgtest.Cluster, database string) sessions.Opener {
	return func(ctx context.Context, owner string) (*pgx.Conn, time.Time, error) {
		cfg, err := c.ConnConfig(database)
		if err != nil {
			return nil, time.Time{}, err
		}
		cfg.User = owner
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, time.Time{}, err
		}
		var start time.Time
		if err := conn.QueryRow(ctx, "SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()").Scan(&start); err != nil {
			conn.Close(ctx)
			return nil, time.Time{}, err
		}
		return conn, start, nil
	}
}

// acquire asks for a session of owner and returns a channel that receives it once granted.
func acquire(t *testing.T, ctx context.Context, p *sessions.Pool, owner string) <-chan *sessions.Session {
	t.Helper()
	got := make(chan *sessions.Session, 1)
	waiting := make(chan struct{})
	go func() {
		s, err := p.Acquire(ctx, owner, sessions.Hooks{Waiting: func(int) { close(waiting) }})
		if err != nil {
			if ctx.Err() == nil {
				t.Errorf("acquire as %s: %v", owner, err)
			}
			close(got)
			return
		}
		got <- s
	}()
	select {
	case <-waiting:
	case s := <-got: // granted at once
		ready := make(chan *sessions.Session, 1)
		ready <- s
		return ready
	}
	return got
}

func whoami(t *testing.T, s *sessions.Session) string {
	t.Helper()
	var user string
	if err := s.Conn.QueryRow(context.Background(), "SELECT current_user").Scan(&user); err != nil {
		t.Fatal(err)
	}
	return user
}

func TestSessionIsReusedByItsOwnerAndReset(t *testing.T) {
	t.Parallel()
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	b := sessions.NewBudget(4)
	p := b.NewPool(context.Background(), 8, opener(cluster, db))
	defer p.Close()
	ctx := context.Background()
	s1, err := p.Acquire(ctx, alice, sessions.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Conn.Exec(ctx, "SET work_mem = '7MB'"); err != nil {
		t.Fatal(err)
	}
	pid := s1.PID
	s1.Release()
	s2, err := p.Acquire(ctx, alice, sessions.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Release()
	if s2.PID != pid {
		t.Errorf("second run of %s got session %d, want the idle one %d", alice, s2.PID, pid)
	}
	var workMem string
	if err := s2.Conn.QueryRow(ctx, "SHOW work_mem").Scan(&workMem); err != nil {
		t.Fatal(err)
	}
	if workMem == "7MB" {
		t.Errorf("the session kept the previous run's setting work_mem = %s: it was not reset", workMem)
	}
}

// An owner with a backlog never holds the last session of the budget: another owner's first run
// gets one at once, and then the freed sessions go to the owners' lines in turn.
func TestOwnersTakeTurns(t *testing.T) {
	t.Parallel()
	db := cluster.NewDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	b := sessions.NewBudget(4)
	p := b.NewPool(context.Background(), 32, opener(cluster, db))
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var held []*sessions.Session
	for range 3 {
		held = append(held, <-acquire(t, ctx, p, alice))
	}
	queued := make([]<-chan *sessions.Session, 5)
	for i := range queued {
		queued[i] = acquire(t, ctx, p, alice) // waits: alice holds all but one
	}
	select {
	case s := <-queued[0]:
		t.Fatalf("alice got a fourth session %d of a budget of 4", s.PID)
	default:
	}
	bobFirst := acquire(t, ctx, p, bob)
	var s *sessions.Session
	select {
	case s = <-bobFirst:
	case <-time.After(10 * time.Second):
		t.Fatal("bob's first run waits while alice holds 3 of 4 sessions")
	}
	if got := whoami(t, s); got != bob {
		t.Fatalf("bob's session is of %s", got)
	}
	bobSecond := acquire(t, ctx, p, bob) // waits behind alice's line, in turn
	held[0].Release()
	first := <-queued[0]
	if got := whoami(t, first); got != alice {
		t.Fatalf("alice's queued run got a session of %s", got)
	}
	held[1].Release()
	select {
	case s2 := <-bobSecond:
		if got := whoami(t, s2); got != bob {
			t.Fatalf("bob's second run got a session of %s", got)
		}
		s2.Release()
	case <-queued[1]:
		t.Fatal("the second freed session went to alice again while bob waited")
	}
	s.Release()
	first.Release()
	held[2].Release()
	for _, q := range queued[1:] {
		(<-q).Release()
	}
	if size, fixed := b.Size(); size != 4 || fixed != 0 {
		t.Errorf("budget = %d (%d fixed), want 4 (0)", size, fixed)
	}
}

// A run whose context ends while it waits leaves its line; what it would have had goes to the next.
func TestGivingUpLeavesTheLine(t *testing.T) {
	t.Parallel()
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	b := sessions.NewBudget(2)
	p := b.NewPool(context.Background(), 1, opener(cluster, db))
	defer p.Close()
	ctx := context.Background()
	held, err := p.Acquire(ctx, alice, sessions.Hooks{})
	if err != nil {
		t.Fatal(err)
	}
	errGone := errors.New("its next fire came")
	waitCtx, give := context.WithCancelCause(ctx)
	gaveUp := make(chan error, 1)
	go func() {
		_, err := p.Acquire(waitCtx, alice, sessions.Hooks{Waiting: func(int) { give(errGone) }})
		gaveUp <- err
	}()
	if err := <-gaveUp; !errors.Is(err, errGone) {
		t.Fatalf("Acquire after its context ended = %v, want %v", err, errGone)
	}
	next := acquire(t, ctx, p, alice)
	held.Release()
	(<-next).Release()
}

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
	var hogs []*pgx.Conn
	for {
		cfg, err := small.ConnConfig(db)
		if err != nil {
			t.Fatal(err)
		}
		cfg.User = other
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			if !sessions.Refused(err) {
				t.Fatalf("connect as %s: %v", other, err)
			}
			break
		}
		hogs = append(hogs, conn)
	}
	defer func() {
		for _, c := range hogs {
			c.Close(context.Background())
		}
	}()
	b := sessions.NewBudget(4) // the budget has room, the server has not
	p := b.NewPool(context.Background(), 4, opener(small, db))
	defer p.Close()

	short, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = p.Acquire(short, alice, sessions.Hooks{})
	stop()
	if err == nil || !sessions.Refused(err) || !strings.Contains(err.Error(), "the server refused new sessions") {
		t.Fatalf("Acquire while the server is full = %v, want the refusal", err)
	}
	got := make(chan error, 1)
	go func() {
		s, err := p.Acquire(ctx, alice, sessions.Hooks{})
		if err == nil {
			s.Release()
		}
		got <- err
	}()
	hogs[0].Close(ctx)
	hogs = hogs[1:]
	if err := <-got; err != nil {
		t.Fatalf("Acquire after a slot freed: %v", err)
	}
}

func TestReservedSessionsAreNotLent(t *testing.T) {
	t.Parallel()
	db := cluster.NewDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	b := sessions.NewBudget(4)
	unreserve, ok := b.Reserve(2)
	if !ok {
		t.Fatal("Reserve(2) of 4 says nothing is left to lend")
	}
	p := b.NewPool(context.Background(), 8, opener(cluster, db))
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a1 := <-acquire(t, ctx, p, alice)
	b1 := <-acquire(t, ctx, p, bob)
	third := acquire(t, ctx, p, bob)
	select {
	case s := <-third:
		t.Fatalf("a third session %d was lent from a budget of 4 with 2 reserved", s.PID)
	default:
	}
	unreserve()
	s := <-third
	for _, x := range []*sessions.Session{a1, b1, s} {
		x.Release()
	}
}
