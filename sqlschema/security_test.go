package sqlschema_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// The attacks on the SQL API of the security model (docs/security.md), each made by an ordinary
// LOGIN role.

func wantError(t *testing.T, conn *pgx.Conn, sql, code, text string) {
	t.Helper()
	_, err := conn.Exec(context.Background(), sql)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code || !strings.Contains(pgErr.Message, text) {
		t.Fatalf("%s:\n got %v\nwant %s containing %q", sql, err, code, text)
	}
}

func queryString(t *testing.T, conn *pgx.Conn, sql string, args ...any) string {
	t.Helper()
	var s string
	if err := conn.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

// TestDefinerFunctionActsAsItsOwner: inside alice's SECURITY DEFINER function called by a
// superuser, the pgj_* functions and views act as alice (current_user), not as the superuser
// (the session user): what it creates is alice's, and it sees and changes only alice's.
func TestDefinerFunctionActsAsItsOwner(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	mustExec(t, super, "SELECT pgj_create_schedule('SuperDaily', 'D 6:30'), pgj_create_job('SuperJob', 'off_line()', null, 'SuperDaily')")
	mustExec(t, super, "CREATE SCHEMA reports AUTHORIZATION "+pgx.Identifier{alice}.Sanitize())
	aliceConn := cluster.ConnectAs(t, db, alice)
	mustExec(t, aliceConn, `
		CREATE FUNCTION reports.make() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
		BEGIN
			PERFORM pgjobs.pgj_create_schedule('Trap', 'D 7:00');
			PERFORM pgjobs.pgj_create_job('TrapJob', 'public.off_line()', null, 'Trap');
		END $$;
		CREATE FUNCTION reports.peek() RETURNS bigint LANGUAGE sql SECURITY DEFINER AS $$ SELECT count(*) FROM pgjobs.pgj_jobs $$;
		CREATE FUNCTION reports.steal() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
		BEGIN PERFORM pgjobs.pgj_update_job('SuperJob', null, 'public.end_of_day()', null); END $$`)
	mustExec(t, super, "SELECT reports.make()")
	if got := queryString(t, super, "SELECT string_agg(owner, ',') FROM (SELECT owner FROM pgj_jobs WHERE name = 'TrapJob' UNION ALL SELECT owner FROM pgj_schedules WHERE name = 'Trap') o"); got != alice+","+alice {
		t.Fatalf("owners of what alice's function made when a superuser called it = %s, want %s twice", got, alice)
	}
	if got := queryString(t, super, "SELECT reports.peek()::text"); got != "1" {
		t.Fatalf("alice's function called by a superuser sees %s jobs, want 1 (her own)", got)
	}
	wantError(t, super, "SELECT reports.steal()", "42704", `job "SuperJob" does not exist`)
	// A superuser does not set the call of alice's job: resolving it would run the input functions
	// and domain checks of alice's types as the superuser.
	wantError(t, super, "SELECT pgj_update_job('TrapJob', null, 'end_of_day()', null)", "42501", "only the job's owner may set its call")
}

// TestInternalFunctionsTrustNoCaller: what PUBLIC may execute is the public API and the functions
// it calls as the caller; the definer functions among them take the caller from a stamp only the
// caller's own code can make, never from an argument, and check again what they write.
func TestInternalFunctionsTrustNoCaller(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	conn := cluster.ConnectAs(t, db, alice)

	rows, _ := conn.Query(ctx, `SELECT p.oid::regprocedure::text FROM pg_proc p
		WHERE p.pronamespace = 'pgjobs'::regnamespace AND p.prosecdef AND has_function_privilege(p.oid, 'EXECUTE')
		  AND EXISTS (SELECT FROM unnest(p.proargnames) a WHERE a ~ 'owner|caller|role|user')`)
	trusting, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(trusting) > 0 {
		t.Fatalf("definer functions PUBLIC may execute that take an owner or caller argument: %v %v", trusting, err)
	}
	var offOid uint32
	if err := super.QueryRow(ctx, "SELECT 'public.off_line()'::regprocedure::oid").Scan(&offOid); err != nil {
		t.Fatal(err)
	}

	create := "SELECT pgjobs.pgj_job_create_('pgj_create_job', $1, $2, $3, null, null, true)"
	if _, err := conn.Exec(ctx, create, "NoStamp", "public.off_line()", offOid); err == nil || !strings.Contains(err.Error(), "call the public pgj_* function") {
		t.Fatalf("a definer function called without a stamp: %v", err)
	}
	// A stamp alice writes herself says alice, whatever she puts in it.
	for _, attempt := range []struct{ name, call string }{
		{"Smuggled", "public.off_line();SELECT public.end_of_day()"},
		{"OtherFunction", "public.end_of_day()"},
		{"Forged", "public.off_line()"},
	} {
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, "INSERT INTO pgjobs.pgj_caller_ (stamprole, stamppid) VALUES (10, 1)"); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Exec(ctx, create, attempt.name, attempt.call, offOid)
		if attempt.name == "Forged" {
			if err != nil {
				t.Fatalf("%s: %v", attempt.name, err)
			}
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			continue
		}
		tx.Rollback(ctx)
		if err == nil {
			t.Fatalf("the definer function took call %q for function off_line()", attempt.call)
		}
	}
	if got := queryString(t, super, "SELECT owner FROM pgj_jobs WHERE name = 'Forged'"); got != alice {
		t.Fatalf("owner of the job made with a stamp alice wrote saying role 10 = %s, want %s", got, alice)
	}

	// A stamp alice plants, with the highest stampid, before code of bob's makes a job in her
	// transaction: the job is bob's.
	bob := cluster.NewRole(t, "bob", db)
	mustExec(t, super, "CREATE SCHEMA bob AUTHORIZATION "+pgx.Identifier{bob}.Sanitize())
	mustExec(t, cluster.ConnectAs(t, db, bob), fmt.Sprintf(`CREATE FUNCTION bob.setup() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$
		BEGIN PERFORM pgjobs.pgj_create_job('BobJob', 'public.off_line()', null, null); END $$;
		GRANT USAGE ON SCHEMA bob TO %s; GRANT EXECUTE ON FUNCTION bob.setup() TO %[1]s`, pgx.Identifier{alice}.Sanitize()))
	mustExec(t, conn, `BEGIN; INSERT INTO pgjobs.pgj_caller_ (stampid) OVERRIDING SYSTEM VALUE VALUES (9223372036854775807);
		SELECT bob.setup(); COMMIT`)
	if got := queryString(t, super, "SELECT owner FROM pgj_jobs WHERE name = 'BobJob'"); got != bob {
		t.Fatalf("owner of the job bob's function made after alice planted a stamp = %s, want %s", got, bob)
	}

	for _, sql := range []string{
		"SELECT count(*) FROM pgjobs.pgj_caller_",
		"DELETE FROM pgjobs.pgj_caller_",
		"SELECT count(*) FROM pgjobs.pgj_job_",
		"BEGIN; LOCK TABLE pgjobs.pgj_caller_ IN ACCESS EXCLUSIVE MODE",
		"BEGIN; LOCK TABLE pgjobs.pgj_job_ IN SHARE MODE",
	} {
		wantError(t, conn, sql, "42501", "permission denied")
		mustExec(t, conn, "ROLLBACK")
	}
}

// TestValidationRunsNothing: a call that smuggles a statement is refused before anything of it
// runs, in any session setting.
func TestValidationRunsNothing(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	mustExec(t, super, `CREATE FUNCTION evil() RETURNS void LANGUAGE sql AS $$ INSERT INTO calls (name) VALUES ('evil') $$;
		GRANT EXECUTE ON FUNCTION evil() TO PUBLIC`)
	conn := cluster.ConnectAs(t, db, alice)
	for _, setting := range []string{"on", "off"} {
		mustExec(t, conn, "SET standard_conforming_strings = "+setting)
		for _, call := range []string{
			`f(E'\'');SELECT evil();--')`,
			`f('\'');SELECT evil();--')`,
			`f($$a$$);SELECT evil();--$$)`,
		} {
			_, err := conn.Exec(context.Background(), "SELECT pgj_create_job('Smuggle', $1, null, null)", call)
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "42601" {
				t.Fatalf("standard_conforming_strings %s: pgj_create_job with %s: %v, want 42601", setting, call, err)
			}
		}
	}
	if got := queryString(t, super, "SELECT count(*)::text FROM calls"); got != "0" {
		t.Fatalf("validation ran %s calls", got)
	}
}

// TestNamesAreCapped: a job or schedule name is at most 200 characters.
func TestNamesAreCapped(t *testing.T) {
	t.Parallel()
	db, _ := apiDatabase(t)
	conn := cluster.ConnectAs(t, db, cluster.NewRole(t, "alice", db))
	long := strings.Repeat("é", 201)
	wantError(t, conn, "SELECT pgj_create_schedule('"+long+"', 'D 1:00')", "54000", "pgj_create_schedule: argument 1 (schedule name) is 201 characters long; at most 200 are allowed")
	wantError(t, conn, "SELECT pgj_create_job('"+long+"', 'off_line()', null, null)", "54000", "pgj_create_job: argument 1 (job name) is 201 characters long")
	mustExec(t, conn, "SELECT pgj_create_job('"+long[:400]+"', 'off_line()', null, null)")
}

// TestUpgradeFromVersion1: the jobs and schedules of version 1 keep their owners (now by OID);
// their calls stay unresolved (the upgrade, run by a superuser, parses no role's text), and the
// agent runs none until its owner sets it again; nothing a role put in public is called.
func TestUpgradeFromVersion1(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	setup := cluster.Connect(t, db)
	if err := sqlschema.InstallVersion(ctx, setup, 1); err != nil {
		t.Fatal(err)
	}
	super := cluster.Connect(t, db)
	mustExec(t, super, userFunctions)
	alice := cluster.NewRole(t, "alice", db)
	mustExec(t, super, "SELECT pgj_create_schedule('Daily', 'D 6:30'), pgj_create_job('Mine', 'off_line()', null, 'Daily')")
	mustExec(t, cluster.ConnectAs(t, db, alice), `SELECT pgj_create_schedule('Hers', 'D 7:00'),
		pgj_create_job('Smuggle', 'f(1, E''\'''');SELECT off_line();--'')', null, 'Hers')`)
	// A trap for the upgrade, which a superuser runs in a session whose search_path has public: an
	// overload of a built-in function that fits the upgrade's arguments better (many databases
	// still let every role create in public).
	mustExec(t, super, "GRANT CREATE ON SCHEMA public TO "+pgx.Identifier{alice}.Sanitize())
	mustExec(t, cluster.ConnectAs(t, db, alice), `CREATE FUNCTION public.format(f text, n name) RETURNS text LANGUAGE plpgsql AS $$
		BEGIN
			IF (SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user) THEN INSERT INTO public.calls (name) VALUES ('escalated'); END IF;
			RETURN pg_catalog.format(f, n);
		END $$`)
	if from, to, err := sqlschema.Upgrade(ctx, super); err != nil || from != 1 || to != sqlschema.Latest() {
		t.Fatalf("Upgrade = %d, %d, %v", from, to, err)
	}
	rows, _ := super.Query(ctx, `SELECT jobname || ' ' || jobfunction || ' ' || pg_get_userbyid(jobownerid) || ' ' || (jobfuncoid IS NOT NULL)
		FROM pgjobs.pgj_job_ ORDER BY jobname`)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Mine off_line() " + cluster.User() + " false", `Smuggle f(1, E'\'');SELECT off_line();--') ` + alice + " false"}
	if n := queryString(t, super, "SELECT count(*)::text FROM calls WHERE name = 'escalated'"); n != "0" {
		t.Fatal("the upgrade called a function a role put in public, as the superuser")
	}
	mustExec(t, super, "SELECT pgj_update_job('Mine', null, 'off_line()', null)")
	if got := queryString(t, super, "SELECT function FROM pgj_jobs WHERE name = 'Mine'"); got != "public.off_line()" {
		t.Fatalf("call set again after the upgrade = %s, want public.off_line()", got)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("jobs after the upgrade:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestStoredCallsAreQualified: a call is stored as PostgreSQL writes it back, every name
// schema-qualified, in a form the call checker takes again and that calls what the call as written
// called.
func TestStoredCallsAreQualified(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	mustExec(t, super, `CREATE SCHEMA lib;
		CREATE FUNCTION lib.show(VARIADIC v text[]) RETURNS text LANGUAGE sql AS $$ SELECT array_to_string(v, '|') $$;
		CREATE FUNCTION lib.mix(a numeric, b float8, c date, d interval, e int[], f text, g bigint, h boolean, i bit(3), j varchar(5))
			RETURNS text LANGUAGE sql AS $$ SELECT concat_ws('|', a, b, c, d, e, f, g, h, i, j) $$;
		GRANT USAGE ON SCHEMA lib TO PUBLIC`)
	conn := cluster.ConnectAs(t, db, cluster.NewRole(t, "alice", db))
	mustExec(t, conn, "SET search_path = lib, public, pgjobs")
	for _, tt := range []struct{ name, call, stored string }{
		{"variadic", `show('a', E'b\\c', 'd''e')`, `lib.show(VARIADIC ARRAY['a'::text, 'b\c'::text, 'd''e'::text])`},
		{"types", `mix(-1.5, 0.5, date '2026-01-01', interval '1 day', ARRAY[1, -2], $$x$$, 10000000000, true, B'101', 'ab')`,
			`lib.mix('-1.5'::numeric, (0.5)::double precision, '2026-01-01'::date, '1 day'::interval, ARRAY[1, '-2'::integer], 'x'::text, '10000000000'::bigint, true, '101'::"bit", 'ab'::character varying)`},
		{"named", `mix(j => 'x', i => '1'::bit(3), h => null, g => 1, f => U&'\0041', e => null, d => null, c => null, b => -0.5, a => 1)`, ""},
		{"pg_catalog", `upper('x')`, `pg_catalog.upper('x'::text)`},
	} {
		var stored string
		mustExec(t, conn, "SELECT pgj_drop_job(name) FROM pgj_jobs")
		if _, err := conn.Exec(ctx, "SELECT pgj_create_job('J', $1, null, null)", tt.call); err != nil {
			t.Fatalf("%s: %s: %v", tt.name, tt.call, err)
		}
		stored = queryString(t, conn, "SELECT function FROM pgj_jobs WHERE name = 'J'")
		if tt.stored != "" && stored != tt.stored {
			t.Errorf("%s: %s stored as\n%s\nwant\n%s", tt.name, tt.call, stored, tt.stored)
		}
		var direct, back string
		if err := conn.QueryRow(ctx, "SELECT ("+tt.call+")::text").Scan(&direct); err != nil {
			t.Fatalf("%s: SELECT %s: %v", tt.name, tt.call, err)
		}
		if err := super.QueryRow(ctx, "SELECT ("+stored+")::text").Scan(&back); err != nil || back != direct {
			t.Fatalf("%s: SELECT %s = %q, %v; the call as written gave %q", tt.name, stored, back, err, direct)
		}
	}
}
