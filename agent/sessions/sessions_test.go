package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
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
		cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, time.Time{}, err
		}
		var start time.Time
		// Qualified in full, as the agent's is: a test role may put an = of its own first.
		if err := conn.QueryRow(ctx, "SELECT backend_start FROM pg_catalog.pg_stat_activity WHERE pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()").Scan(&start); err != nil {
			conn.Close(ctx)
			return nil, time.Time{}, err
		}
		return conn, start, nil
	}
}

// onePool returns alice, a budget of size sessions and the pool, lending max at once, of a new
// database in it; the pool closes when the test ends.
func onePool(t *testing.T, size, max int) (alice string, b *sessions.Budget, p *sessions.Pool) {
	t.Helper()
	db := cluster.NewDatabase(t)
	alice = cluster.NewRole(t, "alice", db)
	b = sessions.NewBudget(size)
	p = b.NewPool(context.Background(), max, opener(cluster, db))
	t.Cleanup(p.Close)
	return alice, b, p
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

// leaveState leaves in s what a run may leave in its session: settings (one that makes the next
// transaction read-only among them), a temporary table, a session advisory lock, a LISTEN, a
// prepared statement and a cursor WITH HOLD.
func leaveState(t *testing.T, s *sessions.Session) {
	t.Helper()
	for _, stmt := range stateLeft {
		if _, err := s.Conn.Exec(context.Background(), stmt, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// stateLeft are the statements of leaveState: one transaction each, but for the cursor's.
var stateLeft = []string{
	"SELECT set_config('bench.left', 'dirty', false)", "SET work_mem = '7MB'",
	"CREATE TEMP TABLE scratch (x int)", "SELECT pg_advisory_lock(4242)", "LISTEN left_over",
	"PREPARE left_over AS SELECT 1", "BEGIN", "DECLARE held CURSOR WITH HOLD FOR SELECT 1", "COMMIT",
	"SET default_transaction_read_only = on",
}

// runLeavingState leaves leaveState's state from a run of s: its statements as one transaction,
// with the reset behind them in the same round trip.
func runLeavingState(t *testing.T, s *sessions.Session) {
	t.Helper()
	var stmts []sessions.Statement
	for _, stmt := range stateLeft {
		if stmt != "BEGIN" && stmt != "COMMIT" {
			stmts = append(stmts, sessions.Statement{SQL: stmt})
		}
	}
	if err := s.Run(context.Background(), stmts); err != nil {
		t.Fatal(err)
	}
}

// leftState returns what a run on s sees of leaveState's state, reading it as a run is sent (one
// transaction, the extended protocol); "" when nothing is left.
func leftState(t *testing.T, s *sessions.Session) string {
	t.Helper()
	batch := &pgconn.Batch{}
	batch.ExecParams(`SELECT concat_ws(' ',
		'read_only=' || nullif(current_setting('transaction_read_only'), 'off'),
		'setting=' || nullif(current_setting('bench.left', true), ''),
		'work_mem=' || nullif(current_setting('work_mem'), '4MB'),
		'temp=' || to_regclass('pg_temp.scratch'),
		'advisory=' || nullif((SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()), 0),
		'prepared=' || nullif((SELECT count(*) FROM pg_prepared_statements WHERE name = 'left_over'), 0),
		'cursor=' || nullif((SELECT count(*) FROM pg_cursors WHERE name = 'held'), 0))`, nil, nil, nil, nil)
	results, err := s.Conn.PgConn().ExecBatch(context.Background(), batch).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	last := results[len(results)-1]
	if last.Err != nil {
		t.Fatal(last.Err)
	}
	// UNLISTEN takes effect when the run's transaction commits.
	var listening int
	if err := s.Conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_listening_channels()").Scan(&listening); err != nil {
		t.Fatal(err)
	}
	if listening > 0 {
		return strings.TrimSpace(string(last.Rows[0][0]) + " listening after the run")
	}
	return string(last.Rows[0][0])
}

// An owner's next run gets the session its previous run used, reset, whether the session waited
// idle or went straight to the next run of its line: that run sees nothing of the previous one.
// The session is reset the same way when given back with Release and when its run ends (Run).
func TestSessionIsResetBetweenRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		leaveGive func(t *testing.T, s *sessions.Session) // leaves state on s, and gives s back
	}{
		{"Release", func(t *testing.T, s *sessions.Session) { leaveState(t, s); s.Release() }},
		{"Run", runLeavingState},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			alice, _, p := onePool(t, 4, 1)
			ctx := context.Background()

			s1, err := p.Acquire(ctx, alice, sessions.Hooks{})
			if err != nil {
				t.Fatal(err)
			}
			if left := leftState(t, s1); left != "" {
				t.Fatalf("a new session has state: %s", left)
			}
			tc.leaveGive(t, s1) // nobody waits: it goes idle
			s2 := got(t, acquire(t, ctx, p, alice), "the idle session")
			if s2.PID != s1.PID {
				t.Errorf("after an idle wait: session %d, want %d", s2.PID, s1.PID)
			}
			if left := leftState(t, s2); left != "" {
				t.Errorf("after an idle wait the session kept %s", left)
			}

			next := acquire(t, ctx, p, alice) // waits: the pool lends one session
			tc.leaveGive(t, s2)
			s3 := got(t, next, "the session handed over")
			if s3.PID != s1.PID {
				t.Fatalf("handed over: session %d, want %d", s3.PID, s1.PID)
			}
			if left := leftState(t, s3); left != "" {
				t.Errorf("the run after the handover saw %s", left)
			}
			s3.Release()
		})
	}
}

// A run's statements are one transaction: when one fails, the server runs none after it and undoes
// those before; the session is reset and kept all the same. A run whose context ends before it
// does is cancelled, and its session closed; a run that ends its own session fails with the
// server's message.
func TestRunIsOneTransaction(t *testing.T) {
	t.Parallel()
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	admin := cluster.Connect(t, db)
	if _, err := admin.Exec(context.Background(), "CREATE TABLE hits (n int); GRANT ALL ON hits TO "+pgx.Identifier{alice}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	b := sessions.NewBudget(4)
	p := b.NewPool(context.Background(), 1, opener(cluster, db))
	defer p.Close()
	ctx := context.Background()

	s := got(t, acquire(t, ctx, p, alice), "a session")
	err := s.Run(ctx, []sessions.Statement{
		{SQL: "INSERT INTO hits VALUES ($1)", Args: [][]byte{[]byte("1")}},
		{SQL: "SELECT 1/0"},
		{SQL: "INSERT INTO hits VALUES (2)"},
	})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22012" {
		t.Fatalf("a run with a division by zero: %v, want its error", err)
	}
	var hits int
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM hits").Scan(&hits); err != nil {
		t.Fatal(err)
	}
	if hits != 0 {
		t.Errorf("%d rows of a failed run are in the table, want none", hits)
	}
	again := got(t, acquire(t, ctx, p, alice), "the session after a failed run")
	if again.PID != s.PID {
		t.Errorf("after a failed run: session %d, want %d, kept", again.PID, s.PID)
	}

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if err := again.Run(short, []sessions.Statement{{SQL: "SELECT pg_sleep(30)"}}); err == nil {
		t.Fatal("a run past its context's end succeeded")
	}
	last := got(t, acquire(t, ctx, p, alice), "a session after a cancelled run")
	if last.PID == s.PID {
		t.Errorf("the session of a cancelled run was kept")
	}
	err = last.Run(ctx, []sessions.Statement{{SQL: "SELECT (pg_terminate_backend(pg_backend_pid())) IS NULL"}})
	if !errors.As(err, &pgErr) || pgErr.Code != "57P01" {
		t.Errorf("a run that ends its own session: %v, want the server's FATAL error 57P01", err)
	}
	last = got(t, acquire(t, ctx, p, alice), "a session after a run that ended its own")
	if err := last.Run(ctx, []sessions.Statement{{SQL: "INSERT INTO hits VALUES (3)"}}); err != nil {
		t.Fatal(err)
	}
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM hits").Scan(&hits); err != nil || hits != 1 {
		t.Errorf("after a run that inserts one row: %d rows (%v), want 1", hits, err)
	}
}

// got returns the session q receives, failing the test if none comes within 10 s.
func got(t *testing.T, q <-chan *sessions.Session, what string) *sessions.Session {
	t.Helper()
	select {
	case s := <-q:
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no session", what)
		return nil
	}
}

// An owner with a backlog never holds the last session of the budget: another owner's first run
// gets one at once; then each freed session goes to the owner holding fewer.
func TestOwnersShareFairly(t *testing.T) {
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
		held = append(held, got(t, acquire(t, ctx, p, alice), "alice's first three runs"))
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
	bob1 := got(t, acquire(t, ctx, p, bob), "bob's first run, while alice holds 3 of 4 sessions")
	if who := whoami(t, bob1); who != bob {
		t.Fatalf("bob's session is of %s", who)
	}
	bobSecond := acquire(t, ctx, p, bob) // waits, behind alice's line
	held[0].Release()                    // alice holds 2, bob 1: bob's line is served
	bob2 := got(t, bobSecond, "bob's second run after alice released one of her three")
	if who := whoami(t, bob2); who != bob {
		t.Fatalf("bob's second run got a session of %s", who)
	}
	select {
	case s := <-queued[0]:
		t.Fatalf("alice's queued run got session %d while bob held fewer", s.PID)
	default:
	}
	held[1].Release() // alice holds 1, bob 2: alice's line is served, with the session she left
	first := got(t, queued[0], "alice's queued run")
	if who := whoami(t, first); who != alice {
		t.Fatalf("alice's queued run got a session of %s", who)
	}
	for _, x := range []*sessions.Session{bob1, bob2, first, held[2]} {
		x.Release()
	}
	for i, q := range queued[1:] {
		got(t, q, fmt.Sprintf("alice's queued run %d", i+2)).Release()
	}
}

// A run whose context ends while it waits leaves its line; what it would have had goes to the next.
func TestGivingUpLeavesTheLine(t *testing.T) {
	t.Parallel()
	alice, _, p := onePool(t, 2, 1)
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

// TestTryReserve: a reservation is taken only when the budget has the sessions now, the runs left
// one; a refused one changes nothing.
func TestTryReserve(t *testing.T) {
	t.Parallel()
	db := cluster.NewDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	b := sessions.NewBudget(4)
	fixed, _ := b.Reserve(2)
	defer fixed()
	if _, ok := b.TryReserve(2); ok {
		t.Fatal("TryReserve(2) with 2 of 4 reserved left the runs none")
	}
	p := b.NewPool(context.Background(), 8, opener(cluster, db))
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lent := []*sessions.Session{<-acquire(t, ctx, p, alice), <-acquire(t, ctx, p, bob)}
	if _, ok := b.TryReserve(1); ok {
		t.Fatal("TryReserve(1) with 2 of 4 reserved and 2 lent went over the budget")
	}
	if size, inUse, _ := b.Use(); size != 4 || inUse != 4 {
		t.Fatalf("a refused TryReserve changed the budget: %d of %d in use", inUse, size)
	}
	lent[1].Release()
	lent[0].Release()
	unreserve, ok := b.TryReserve(1)
	if !ok {
		t.Fatal("TryReserve(1) with 2 of 4 reserved and none lent refused")
	}
	if size, inUse, _ := b.Use(); size != 4 || inUse > 3+1 {
		t.Fatalf("after TryReserve(1): %d of %d in use", inUse, size)
	}
	unreserve()
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
