package sessions_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent/sessions"
)

// A kept session that its server ended while it was idle (here its own role, with
// pg_terminate_backend) is not lent to the next run, which would fail though nothing of it ran: the
// run gets a new session, opened at once, or ahead by the warming before its fire.
func TestSessionEndedWhileIdleIsNotLent(t *testing.T) {
	t.Parallel()
	for _, warmed := range []bool{false, true} {
		name := map[bool]string{false: "at the run", true: "by the warming"}[warmed]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := cluster.NewDatabase(t)
			alice := cluster.NewRole(t, "alice", db)
			var opened atomic.Int32
			p := sessions.NewBudget(4).NewPool(ctx, 2, counted(opener(cluster, db), &opened))
			t.Cleanup(p.Close)

			s := got(t, acquire(t, ctx, p, alice), "the first run")
			ended := s.PID
			if err := s.Run(ctx, []sessions.Statement{{SQL: "SELECT 1"}}); err != nil {
				t.Fatalf("first run: %v", err)
			}
			ac := cluster.ConnectAs(t, db, alice)
			if _, err := ac.Exec(ctx, "SELECT pg_terminate_backend($1)", ended); err != nil {
				t.Fatal(err)
			}
			waitGone(t, ac, ended)

			if warmed {
				p.Warm(ctx, alice, 1)
				if n := opened.Load(); n != 2 {
					t.Fatalf("the warming opened %d sessions in all, want 2: it kept the ended one", n)
				}
			}
			s = got(t, acquire(t, ctx, p, alice), "the run after")
			if s.PID == ended {
				t.Fatalf("the run was lent the session whose backend %d had ended", ended)
			}
			if err := s.Run(ctx, []sessions.Statement{{SQL: "SELECT 1"}}); err != nil {
				t.Fatalf("the run after: %v", err)
			}
			if n := opened.Load(); n != 2 {
				t.Fatalf("%d sessions opened in all, want 2", n)
			}
		})
	}
}

// waitServer waits until the server finds cond (an SQL boolean of args) true, for 10 s at most;
// what names the wait in the failure. The server's views change with no event to wait on: it polls.
func waitServer(t *testing.T, conn *pgx.Conn, what, cond string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var done bool
		if err := conn.QueryRow(context.Background(), "SELECT "+cond, args...).Scan(&done); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitGone waits until the backend pid has left pg_stat_activity: it has sent its session the
// FATAL error that ends it.
func waitGone(t *testing.T, conn *pgx.Conn, pid uint32) {
	t.Helper()
	waitServer(t, conn, fmt.Sprintf("backend %d gone", pid), "NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1)", pid)
}

// A kept session that the server sent a notification while it was idle (a task's session kept with
// its state, listening) is no ended session: it is lent again, its state intact (the review of the
// look at idle sessions, which closed it at first).
func TestSessionNotifiedWhileIdleIsLentAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	p := sessions.NewBudget(4).NewPool(ctx, 2, opener(cluster, db))
	t.Cleanup(p.Close)

	s := got(t, acquire(t, ctx, p, alice), "the first run")
	kept := s.PID
	if _, err := s.Conn.Exec(ctx, "LISTEN pgjobs_test; CREATE TEMP TABLE saved (x int)", pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatal(err)
	}
	s.ReleaseKeepingState()
	ac := cluster.ConnectAs(t, db, alice)
	for i := range 3 {
		if _, err := ac.Exec(ctx, "SELECT pg_notify('pgjobs_test', $1)", strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	waitNotified(t, ac)

	s = got(t, acquire(t, ctx, p, alice), "the run after")
	if s.PID != kept {
		t.Fatalf("the run was lent backend %d, not the kept one %d: the notified session was closed", s.PID, kept)
	}
	var n int
	if err := s.Conn.QueryRow(ctx, "SELECT count(*) FROM saved").Scan(&n); err != nil {
		t.Fatalf("the kept state is gone: %v", err)
	}
	s.Release()
}

// waitNotified waits until the notifications sent before it have reached their listeners' clients:
// the queue is empty once every listener has read them.
func waitNotified(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	waitServer(t, conn, "notifications taken", "pg_notification_queue_usage() = 0")
}

// The look at an idle session reads no further than its deadline, whatever is there to read: a role
// flooding its own listening session with notifications does not hold the budget's lock longer (the
// attacker review of the look).
func TestLookAtIdleSessionReadsNoFurtherThanItsDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	listener := cluster.ConnectAs(t, db, alice)
	if _, err := listener.Exec(ctx, "LISTEN pgjobs_test"); err != nil {
		t.Fatal(err)
	}
	ac := cluster.ConnectAs(t, db, alice)
	if _, err := ac.Exec(ctx, "SELECT pg_notify('pgjobs_test', 'x' || i) FROM generate_series(1, 3) i"); err != nil {
		t.Fatal(err)
	}
	waitNotified(t, ac)
	conn := listener.PgConn()
	// The first read takes the three, sent at once, into pgconn's buffer: the look's reading is
	// then bounded by its deadline only, not by the socket's.
	if _, err := conn.ReceiveMessage(ctx); err != nil {
		t.Fatal(err)
	}
	if pending, open := sessions.Pending(conn); !pending || !open {
		t.Fatalf("pending %v, open %v: want the notifications waiting on an open session", pending, open)
	}
	if !sessions.Alive(conn, time.Now()) {
		t.Fatal("a session with notifications waiting looked ended")
	}
	if pending, _ := sessions.Pending(conn); !pending {
		t.Fatal("the look read past its deadline")
	}
	if !sessions.Alive(conn, time.Now().Add(10*time.Second)) {
		t.Fatal("a session with notifications waiting looked ended")
	}
	if pending, open := sessions.Pending(conn); pending || !open {
		t.Fatalf("pending %v, open %v after a look with time to read: want all read, the session open", pending, open)
	}
	var one int
	if err := listener.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatalf("the session after the look: %d, %v", one, err)
	}
}
