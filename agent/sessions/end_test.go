package sessions_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// endOpener opens the sessions that end a backend of a run given up, as the agent does: as the
// owner, with sessions.EndParams.
func endOpener(c *pgtest.Cluster, database string) sessions.Opener {
	return func(ctx context.Context, owner string) (*pgx.Conn, time.Time, error) {
		cfg, err := c.ConnConfig(database)
		if err != nil {
			return nil, time.Time{}, err
		}
		cfg.User = owner
		for k, v := range sessions.EndParams {
			cfg.RuntimeParams[k] = v
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		return conn, time.Time{}, err
	}
}

// A run given up whose call catches the cancel (and turned the server's check of the client's
// connection off) does not run on outside the budget: its backend is ended EndAfter later, on a
// session of its own role (noted by the attacker review of stop 26; it ran until its call ended),
// whatever defaults the role set meanwhile: a search_path putting an = of its own first (the code
// review's finding), a statement_timeout of 1 ms or a DateStyle (the attacker review's).
func TestRunCatchingItsCancelIsEnded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	admin := cluster.Connect(t, db)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA s AUTHORIZATION "+pgx.Identifier{alice}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	ac := cluster.ConnectAs(t, db, alice)
	if _, err := ac.Exec(ctx, `CREATE FUNCTION s.stubborn() RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('client_connection_check_interval', '0', false);
	LOOP
		BEGIN
			PERFORM pg_sleep(60);
		EXCEPTION WHEN query_canceled THEN
			NULL;
		END;
	END LOOP;
END $$`); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`CREATE FUNCTION s.never(int, int) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT false'`,
		`CREATE OPERATOR s.= (LEFTARG = int, RIGHTARG = int, FUNCTION = s.never)`,
		`CREATE FUNCTION s.never(timestamptz, timestamptz) RETURNS bool LANGUAGE sql IMMUTABLE AS 'SELECT false'`,
		`CREATE OPERATOR s.= (LEFTARG = timestamptz, RIGHTARG = timestamptz, FUNCTION = s.never)`,
	} {
		if _, err := ac.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	b := sessions.NewBudget(4)
	b.EndAfter = 300 * time.Millisecond
	p := b.NewPool(ctx, 1, opener(cluster, db))
	p.OpenToEnd = endOpener(cluster, db)
	warned := make(chan string, 1)
	p.Warnf = func(format string, args ...any) {
		select {
		case warned <- fmt.Sprintf(format, args...):
		default:
		}
	}
	t.Cleanup(p.Close)
	s := got(t, acquire(t, ctx, p, alice), "a session")
	pid := s.PID
	// Set while the run holds its session: only the session that ends it sees them.
	for _, sql := range []string{
		`ALTER ROLE CURRENT_USER SET search_path = s, pg_catalog`,
		`ALTER ROLE CURRENT_USER SET statement_timeout = 1`,
		`ALTER ROLE CURRENT_USER SET DateStyle = 'SQL, DMY'`,
	} {
		if _, err := ac.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	runCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := s.Run(runCtx, []sessions.Statement{{SQL: "SELECT (s.stubborn()) IS NULL"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run: %v, want its context's deadline", err)
	}
	select {
	case w := <-warned:
		if !strings.Contains(w, "ended") || !strings.Contains(w, fmt.Sprint(pid)) {
			t.Fatalf("warned %q, want backend %d ended", w, pid)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("backend %d of a run given up was not ended 30 s after", pid)
	}
	waitGone(t, admin, pid)
}

// The backend a run was given up on is named by its process id and its start: a backend with the
// same process id but another start (the id taken again) is not ended.
func TestEndBackendNamesItByItsStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	p := sessions.NewBudget(4).NewPool(ctx, 1, opener(cluster, db))
	p.OpenToEnd = endOpener(cluster, db)
	t.Cleanup(p.Close)
	other := cluster.ConnectAs(t, db, alice)
	pid := other.PgConn().PID()
	var start time.Time
	if err := other.QueryRow(ctx, "SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()").Scan(&start); err != nil {
		t.Fatal(err)
	}
	if ended, err := sessions.EndBackend(p, alice, pid, start.Add(time.Microsecond)); err != nil || ended {
		t.Fatalf("another start: ended %v, %v; want the backend left alone", ended, err)
	}
	if err := other.Ping(ctx); err != nil {
		t.Fatalf("the backend of another start was ended: %v", err)
	}
	if ended, err := sessions.EndBackend(p, alice, pid, start); err != nil || !ended {
		t.Fatalf("its start: ended %v, %v; want it ended", ended, err)
	}
	waitGone(t, cluster.Connect(t, db), pid)
}
