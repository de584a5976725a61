package sessions_test

// The attacker review of the reset sent behind the run (docs/security.md): what a run of alice, an
// ordinary LOGIN role, can leave in its session, compared with a fresh session's fingerprint.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/pgjobs/pgjobs/agent/sessions"
)

// fingerprint reads, as a run is sent (extended protocol, one transaction), what a run could see of
// an earlier run: every setting with its source, identity, temp objects, prepared statements,
// cursors, advisory locks, LISTEN.
const fingerprintSQL = `SELECT concat_ws(E'\n',
 'user=' || current_user || '/' || session_user,
 'settings=' || (SELECT string_agg(name || '=' || coalesce(setting,'') || '@' || source, ',' ORDER BY name) FROM pg_settings WHERE name NOT LIKE 'plpgsql.%' OR source <> 'default'),
 'temprel=' || (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()),
 'tempproc=' || (SELECT count(*) FROM pg_proc WHERE pronamespace = pg_my_temp_schema()),
 'prepared=' || (SELECT count(*) FROM pg_prepared_statements),
 'cursors=' || (SELECT count(*) FROM pg_cursors),
 'advisory=' || (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
 'listen=' || (SELECT count(*) FROM pg_listening_channels()),
 'xact=' || current_setting('transaction_read_only') || current_setting('transaction_isolation') || current_setting('transaction_deferrable'))`

func fingerprint(t *testing.T, s *sessions.Session) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var results []*pgconn.Result
	var err error
	for try := 0; ; try++ {
		batch := &pgconn.Batch{}
		batch.ExecParams(fingerprintSQL, nil, nil, nil, nil)
		results, err = s.Conn.PgConn().ExecBatch(ctx, batch).ReadAll()
		if err == nil && len(results) == 0 {
			t.Logf("fingerprint: no results, no error; closed=%v busy=%v tx=%c pid=%d", s.Conn.IsClosed(), s.Conn.PgConn().IsBusy(), s.Conn.PgConn().TxStatus(), s.PID)
			err = &pgconn.PgError{Code: "57014", Message: "no results"}
		}
		if err == nil && results[0].Err != nil {
			err = results[0].Err
		}
		var pgErr *pgconn.PgError
		if err != nil && errors.As(err, &pgErr) && pgErr.Code == "57014" && try < 200 {
			continue // the storm's cancel hit the reading
		}
		break
	}
	if err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	return string(results[0].Rows[0][0])
}

func diff(a, b string) string {
	var out []string
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range al {
		if i < len(bl) && al[i] != bl[i] {
			if strings.HasPrefix(al[i], "settings=") {
				am := map[string]bool{}
				for _, x := range strings.Split(al[i], ",") {
					am[x] = true
				}
				for _, x := range strings.Split(bl[i], ",") {
					if !am[x] {
						out = append(out, "setting "+x)
					}
				}
				continue
			}
			out = append(out, al[i]+" -> "+bl[i])
		}
	}
	return strings.Join(out, "; ")
}

type attackEnv struct {
	t     *testing.T
	db    string
	alice string
	admin *pgx.Conn
	ac    *pgx.Conn // alice's own session
	p     *sessions.Pool
	clean string // fingerprint of a fresh session
}

func (e *attackEnv) get() *sessions.Session {
	e.t.Helper()
	for try := 0; try < 100; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := e.p.Acquire(ctx, e.alice, sessions.Hooks{})
		cancel()
		if err == nil {
			return s
		}
		e.t.Logf("acquire: %v (again)", err)
	}
	e.t.Fatal("no session")
	return nil
}

func newAttackEnv(t *testing.T) *attackEnv {
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	admin := cluster.Connect(t, db)
	ctx := context.Background()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA s AUTHORIZATION "+pgx.Identifier{alice}.Sanitize()+"; GRANT CREATE ON DATABASE "+pgx.Identifier{db}.Sanitize()+" TO "+pgx.Identifier{alice}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	ac := cluster.ConnectAs(t, db, alice)
	b := sessions.NewBudget(4)
	b.EndAfter = time.Minute // a backend given up ends by its cancel here, not by being ended
	p := b.NewPool(ctx, 1, opener(cluster, db))
	t.Cleanup(p.Close)
	e := &attackEnv{t: t, db: db, alice: alice, admin: admin, ac: ac, p: p}
	s := got(t, acquire(t, ctx, p, alice), "fresh")
	e.clean = fingerprint(t, s)
	s.Release()
	return e
}

func (e *attackEnv) fn(sql string) {
	e.t.Helper()
	if _, err := e.ac.Exec(context.Background(), sql); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

// run runs call as the agent does and reports the run's error, whether the session was kept and
// what the next run on it sees that a fresh session does not.
func (e *attackEnv) run(ctx context.Context, timeoutMS int, call string) runOutcome {
	e.t.Helper()
	s := e.get()
	pid := s.PID
	var stmts []sessions.Statement
	if timeoutMS > 0 {
		stmts = append(stmts, sessions.Statement{SQL: "SELECT pg_catalog.set_config('statement_timeout', $1, true)", Args: [][]byte{[]byte(fmt.Sprint(timeoutMS))}})
	}
	stmts = append(stmts,
		sessions.Statement{SQL: "SELECT pg_catalog.set_config('standard_conforming_strings', 'on', true)"}, // stand-in guard
		sessions.Statement{SQL: "SELECT (" + call + ") IS NULL"})
	start := time.Now()
	var o runOutcome
	o.err = s.Run(ctx, stmts)
	o.took = time.Since(start)
	s2 := e.get()
	defer s2.Release()
	o.kept = s2.PID == pid
	o.left = diff(e.clean, fingerprint(e.t, s2))
	return o
}

// runOutcome is what attackEnv.run reports of a run.
type runOutcome struct {
	err  error         // the run's
	kept bool          // its session was kept for the next run
	left string        // what the next run on it sees that a fresh session does not
	took time.Duration // how long the run took
}

// A run that leaves every kind of session state, settings of every sort included, leaves nothing
// its owner's next run sees: the session is reset and kept, or closed.
func TestNoRunStateSurvivesItsReset(t *testing.T) {
	t.Parallel()
	e := newAttackEnv(t)
	ctx := context.Background()
	if _, err := e.admin.Exec(ctx, "CREATE ROLE grp_attack NOLOGIN; GRANT grp_attack TO "+pgx.Identifier{e.alice}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.admin.Exec(context.Background(), "DROP ROLE grp_attack") })
	e.fn(`CREATE FUNCTION s.dirty(settings text[]) RETURNS int LANGUAGE plpgsql AS $$
DECLARE i int;
BEGIN
  FOR i IN 1 .. coalesce(array_length(settings, 1), 0) BY 2 LOOP
    PERFORM set_config(settings[i], settings[i+1], false);
  END LOOP;
  EXECUTE 'CREATE TEMP TABLE IF NOT EXISTS scratch (x int)';
  EXECUTE 'CREATE TEMP SEQUENCE IF NOT EXISTS tseq';
  PERFORM nextval('tseq');
  EXECUTE 'CREATE FUNCTION pg_temp.tf() RETURNS int LANGUAGE sql AS ''SELECT 1''';
  EXECUTE 'PREPARE left_over AS SELECT 1';
  EXECUTE 'DECLARE held CURSOR WITH HOLD FOR SELECT 1';
  PERFORM pg_advisory_lock(4242);
  EXECUTE 'LISTEN left_over';
  PERFORM pg_notify('left_over', 'x');
  RETURN 1;
END $$`)
	cases := []struct{ name, settings string }{
		{"objects", "NULL"},
		{"search_path", "ARRAY['search_path','pg_temp, s']"},
		{"role", "ARRAY['role','grp_attack']"},
		{"read_only_serializable_deferrable", "ARRAY['default_transaction_read_only','on','default_transaction_isolation','serializable','default_transaction_deferrable','on']"},
		{"encodings", "ARRAY['client_encoding','SJIS','standard_conforming_strings','off','DateStyle','SQL, DMY','IntervalStyle','sql_standard','TimeZone','Pacific/Chatham','extra_float_digits','-15','bytea_output','escape']"},
		{"idle_timeouts", "ARRAY['idle_session_timeout','1','idle_in_transaction_session_timeout','1']"},
		{"statement_timeout_1ms", "ARRAY['statement_timeout','1','lock_timeout','1']"},
		{"misc", "ARRAY['row_security','off','plan_cache_mode','force_generic_plan','my.var','x','application_name','evil','check_function_bodies','off','client_min_messages','debug5','default_tablespace','']"},
	}
	for _, c := range cases {
		o := e.run(ctx, 0, "s.dirty("+c.settings+")")
		t.Logf("%-34s err=%v kept=%v took=%v left=%q", c.name, o.err, o.kept, o.took.Round(time.Millisecond), o.left)
		if o.kept && o.left != "" {
			t.Errorf("%s: KEPT with state left: %s", c.name, o.left)
		}
	}
}

// Errors of the run's transaction raised at its commit (Sync), after rows, at parse time, or by the
// run ending or cancelling its own session, are the run's; none leaves state in a kept session.
func TestRunErrorsLeaveNoState(t *testing.T) {
	t.Parallel()
	e := newAttackEnv(t)
	ctx := context.Background()
	e.fn(`CREATE TABLE s.t (x int)`)
	e.fn(`CREATE FUNCTION s.trg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'deferred boom' USING ERRCODE = 'P0001'; END $$`)
	e.fn(`CREATE CONSTRAINT TRIGGER d AFTER INSERT ON s.t DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION s.trg()`)
	e.fn(`CREATE FUNCTION s.ins() RETURNS int LANGUAGE sql AS $$ INSERT INTO s.t VALUES (1); SELECT 0 FROM (SELECT set_config('search_path','s',false)) x $$`)
	e.fn(`CREATE FUNCTION s.boom() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'materialize boom'; END $$`)
	e.fn(`CREATE FUNCTION s.heldboom() RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM set_config('work_mem','9MB',false); EXECUTE 'DECLARE hb CURSOR WITH HOLD FOR SELECT s.boom()'; RETURN 1; END $$`)
	e.fn(`CREATE FUNCTION s.srf_then_error() RETURNS SETOF int LANGUAGE plpgsql AS $$ BEGIN PERFORM set_config('work_mem','9MB',false); RETURN NEXT 1; RETURN NEXT 2; RAISE EXCEPTION 'after rows'; END $$`)
	e.fn(`CREATE FUNCTION s.self_term() RETURNS int LANGUAGE sql AS $$ SELECT pg_terminate_backend(pg_backend_pid())::int $$`)
	e.fn(`CREATE FUNCTION s.self_cancel() RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM set_config('work_mem','9MB',false); PERFORM pg_cancel_backend(pg_backend_pid()); RETURN 1; END $$`)
	e.fn(`CREATE FUNCTION s.notices() RETURNS int LANGUAGE plpgsql AS $$ BEGIN FOR i IN 1..20000 LOOP RAISE NOTICE '%', repeat('n', 100); END LOOP; PERFORM set_config('work_mem','9MB',false); RETURN 1; END $$`)
	e.fn(`CREATE FUNCTION s.slow_with_catch() RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM set_config('work_mem','9MB',false); BEGIN PERFORM pg_sleep(10); EXCEPTION WHEN query_canceled THEN NULL; END; PERFORM pg_sleep(0.95); RETURN 1; END $$`)
	for _, c := range []struct {
		name, call string
		timeout    int
		wantErr    bool
	}{
		{"deferred trigger", "s.ins()", 0, true},
		{"held cursor materialization", "s.heldboom()", 0, true},
		{"srf rows then error", "s.srf_then_error()", 0, true},
		{"parse error", "s.nosuch()", 0, true},
		{"self terminate", "s.self_term()", 0, true},
		{"self cancel", "s.self_cancel()", 0, true},
		{"notice flood", "s.notices()", 0, false},
	} {
		o := e.run(ctx, c.timeout, c.call)
		t.Logf("%-30s err=%v kept=%v took=%v left=%q", c.name, o.err, o.kept, o.took.Round(time.Millisecond), o.left)
		if (o.err != nil) != c.wantErr {
			t.Errorf("%s: err %v, want error %v", c.name, o.err, c.wantErr)
		}
		if o.kept && o.left != "" {
			t.Errorf("%s: KEPT with state left: %s", c.name, o.left)
		}
	}
	// The job's time limit: the call catches the cancel and runs on to just before ctx's end, where
	// it ends well; whatever it set is reset all the same.
	tctx, cancel := context.WithTimeout(ctx, 1000*time.Millisecond+time.Second)
	o := e.run(tctx, 1000, "s.slow_with_catch()")
	cancel()
	t.Logf("%-30s err=%v kept=%v took=%v left=%q", "catch timeout", o.err, o.kept, o.took.Round(time.Millisecond), o.left)
	if o.kept && o.left != "" {
		t.Errorf("catch timeout: KEPT with state left: %s", o.left)
	}
}

// The fingerprint sees a run's state when no reset ran: the tests above can fail.
func TestFingerprintSeesState(t *testing.T) {
	t.Parallel()
	e := newAttackEnv(t)
	s := got(t, acquire(t, context.Background(), e.p, e.alice), "s")
	for _, st := range stateLeft {
		if _, err := s.Conn.Exec(context.Background(), st, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatal(err)
		}
	}
	left := diff(e.clean, fingerprint(t, s))
	for _, want := range []string{"temprel=", "prepared=", "cursors=", "advisory=", "listen=", "setting work_mem=", "setting default_transaction_read_only="} {
		if !strings.Contains(left, want) {
			t.Errorf("the fingerprint misses %s in what a run left: %s", want, left)
		}
	}
	s.Close()
}

// A run whose error is larger than MaxMessage is not read into memory: it fails, saying so, and its
// session is closed (the README-only attack: a 150 MB error made the agent take 1.3 GB).
func TestOversizedErrorIsNotRead(t *testing.T) {
	t.Parallel()
	alice, _, p := onePool(t, 4, 1)
	s := got(t, acquire(t, context.Background(), p, alice), "a session")
	err := s.Run(context.Background(), []sessions.Statement{{SQL: fmt.Sprintf("DO $$ BEGIN RAISE EXCEPTION '%%', repeat('E', %d); END $$", 2*sessions.MaxMessage)}})
	var tooLong *pgproto3.ExceededMaxBodyLenErr
	if !errors.As(err, &tooLong) {
		t.Fatalf("a run raising a %d-byte error: %v, want the message-too-long error", 2*sessions.MaxMessage, err)
	}
	next := got(t, acquire(t, context.Background(), p, alice), "the next session")
	if next.PID == s.PID {
		t.Error("the session that sent the oversized error was kept")
	}
	next.Release()
}

// A run whose context ends is cancelled on the server, not only given up by the agent: its session
// is closed and its backend stops, even when the call turned the server's check of the client's
// connection off (found by the review of the run sent without pgx's pipeline, which had dropped the
// cancel request).
func TestRunEndedByItsContextIsCancelledOnTheServer(t *testing.T) {
	t.Parallel()
	e := newAttackEnv(t)
	e.fn(`CREATE FUNCTION s.sleep_unchecked() RETURNS int LANGUAGE sql AS $$ SELECT set_config('client_connection_check_interval', '0', false)::int + 0 * pg_sleep(60)::text::int $$`)
	s := e.get()
	pid := s.PID
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := s.Run(ctx, []sessions.Statement{{SQL: "SELECT (s.sleep_unchecked()) IS NULL"}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run: %v, want its context's deadline", err)
	}
	// The backend ends its pg_sleep once cancelled; without the cancel it sleeps 60 s.
	waitServer(t, e.admin, fmt.Sprintf("backend %d no longer active", pid), "NOT EXISTS (SELECT FROM pg_stat_activity WHERE pid = $1 AND state = 'active')", pid)
}
