package sqlschema_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// Since schema version 15 a job's call is bound when it is set to a view of its owner's own call
// schema, which keeps what the call names by OID: the run looks nothing of it up by name.

// boundJob is what the agent reads of a job to run its bound call.
type boundJob struct {
	owner     uint32
	ownerName string
	view      string
}

func readBoundJob(t *testing.T, super *pgx.Conn, name string) boundJob {
	t.Helper()
	var j boundJob
	if err := super.QueryRow(context.Background(), `SELECT jobownerid, pg_get_userbyid(jobownerid)::text, coalesce(jobview, '')
		FROM pgjobs.pgj_job_ WHERE jobname = $1`, name).Scan(&j.owner, &j.ownerName, &j.view); err != nil {
		t.Fatalf("read job %s: %v", name, err)
	}
	return j
}

// runBound runs a job's bound call on conn as the agent does: its guard, then the call, in one
// transaction.
func runBound(ctx context.Context, conn *pgx.Conn, j boundJob) error {
	call, err := sqlschema.ViewCallSQL(j.view)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlschema.RunViewGuardSQL(), j.owner, j.ownerName, j.view); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, call)
		return err
	})
}

// TestCallsAreBound: the view of a job's call is its owner's, in a schema no other role may use;
// the guard runs the view only on a session of the owner, and only the owner's view; setting the
// call again makes a new view, and the agent drops the former ones, and those of dropped jobs.
func TestCallsAreBound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	aliceConn, bobConn := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	mustExec(t, aliceConn, "SELECT pgj_create_job('Report', 'off_line()', null, null)")
	report := readBoundJob(t, super, "Report")
	schema, _, _ := strings.Cut(report.view, ".")
	if got := queryString(t, super, `SELECT pg_get_userbyid(n.nspowner) || ' ' || pg_get_userbyid(c.relowner) || ' ' || c.relkind::text
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1::regclass`, report.view); got != cluster.User()+" "+alice+" v" {
		t.Fatalf("view %s: schema owner, view owner, kind = %s", report.view, got)
	}
	if err := runBound(ctx, aliceConn, report); err != nil {
		t.Fatalf("alice's run: %v", err)
	}
	if got := queryString(t, super, "SELECT count(*)::text FROM calls WHERE name = 'off_line'"); got != "1" {
		t.Fatalf("off_line ran %s times", got)
	}

	// bob can neither look into alice's schema (nor so lock what is in it) nor create there, nor
	// run her view on his session.
	wantError(t, bobConn, "SELECT * FROM "+report.view, "42501", "permission denied for schema "+schema)
	mustExec(t, bobConn, "ROLLBACK")
	wantError(t, bobConn, "CREATE VIEW "+schema+".mine AS SELECT 1", "42501", "permission denied for schema "+schema)
	mustExec(t, bobConn, "ROLLBACK")
	if err := runBound(ctx, bobConn, report); err == nil || !strings.Contains(err.Error(), "this session runs as role "+bob+", not as the job's owner "+alice) {
		t.Fatalf("alice's job on bob's session: %v", err)
	}
	// bob's own view, given to the guard of alice's job, is refused.
	mustExec(t, bobConn, "SELECT pgj_create_job('Bobs', 'off_line()', null, null)")
	forged := report
	forged.view = readBoundJob(t, super, "Bobs").view
	if err := runBound(ctx, aliceConn, forged); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("bob's view run as alice's job: %v", err)
	}

	// A new call is a new view. The old one stays (a run of the old call may still use it, and a
	// drop would wait for it) until the agent drops it a prune after it found it unused, as the
	// view of a dropped job; not the views jobs use, nor views another session holds.
	mustExec(t, aliceConn, "SELECT pgj_update_job('Report', null, 'end_of_day()', null)")
	changed := readBoundJob(t, super, "Report")
	exists := func(view string) bool {
		return queryString(t, super, "SELECT (to_regclass($1) IS NOT NULL)::text", view) == "true"
	}
	if changed.view == report.view || !exists(report.view) {
		t.Fatalf("after the update: view %s, the old one %s there: %v", changed.view, report.view, exists(report.view))
	}
	if err := runBound(ctx, aliceConn, changed); err != nil {
		t.Fatalf("the changed call: %v", err)
	}
	mustExec(t, bobConn, "SELECT pgj_drop_job('Bobs')")
	bobs := forged.view
	orphans, err := sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil || strings.Join(orphans, " ") != strings.Join(sortedPair(report.view, bobs), " ") {
		t.Fatalf("orphaned views %v, %v; want %s and %s", orphans, err, report.view, bobs)
	}
	if _, err := sqlschema.CallViewsDrop(ctx, bobConn, orphans); err == nil || !strings.Contains(err.Error(), "only the agent drops the views of former calls") {
		t.Fatalf("bob drops the views: %v", err)
	}
	holding, err := cluster.ConnectAs(t, db, alice).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holding.Rollback(ctx)
	if _, err := holding.Exec(ctx, "SELECT * FROM "+report.view); err != nil {
		t.Fatal(err)
	}
	// bob's is set aside, and dropped once alice's transaction, open then, ends
	if swept, err := sqlschema.CallViewsDrop(ctx, super, append(orphans, changed.view)); err != nil || swept.Aside != 1 || swept.Waiting != 1 || exists(bobs) || !exists(report.view) || !exists(changed.view) {
		t.Fatalf("drop while alice's session holds %s: %+v, %v; left %s: %v, %s: %v", report.view, swept, err, report.view, exists(report.view), changed.view, exists(changed.view))
	}
	if err := holding.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if swept := sweepAgain(t, super); swept.Dropped != 2 || exists(report.view) {
		t.Fatalf("drop once alice's session let go: %+v", swept)
	}
	// bob has no job left: his schema, empty, went with his last view, and he may be dropped.
	if got := queryString(t, super, "SELECT count(*)::text FROM pg_namespace WHERE nspname = $1", strings.Split(bobs, ".")[0]); got != "0" {
		t.Fatalf("bob's empty call schema: %s left", got)
	}
	// The views of many changes go, CallViewsDropMax a transaction (thousands in one ran out of
	// the server's lock table).
	mustExec(t, super, `DO $$ BEGIN
		FOR i IN 1..450 LOOP
			EXECUTE format('CREATE VIEW %I.%I AS SELECT true AS pgj_call_', '`+schema+`', 'call_' || md5(i::text));
			EXECUTE format('ALTER VIEW %I.%I OWNER TO %I', '`+schema+`', 'call_' || md5(i::text), '`+alice+`');
		END LOOP; END $$`)
	many, err := sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil || len(many) != 450 {
		t.Fatalf("orphaned: %d, %v", len(many), err)
	}
	if swept, err := sqlschema.CallViewsDrop(ctx, super, many); err != nil || swept.Dropped != 450 {
		t.Fatalf("dropped of 450: %+v, %v", swept, err)
	}
	// A view something hangs on (a trigger of its owner's, which would go with it, taking locks:
	// 20,000 ran the drop out of the lock table) is left alone.
	hung := schema + ".call_" + strings.Repeat("0", 32)
	mustExec(t, super, `CREATE VIEW `+hung+` AS SELECT 1 AS x;
		ALTER VIEW `+hung+` OWNER TO `+alice)
	mustExec(t, super, `CREATE FUNCTION public.tf() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`)
	mustExec(t, aliceConn, `CREATE TRIGGER t INSTEAD OF INSERT ON `+hung+` FOR EACH ROW EXECUTE FUNCTION public.tf()`)
	if swept, err := sqlschema.CallViewsDrop(ctx, super, []string{hung}); err != nil || swept.Dropped != 0 || !exists(hung) {
		t.Fatalf("drop of a view with a trigger: %+v, %v; there: %v", swept, err, exists(hung))
	}
	// so is one with a rule of its owner's besides its own (the code review of version 16)
	ruled := schema + ".call_" + strings.Repeat("1", 32)
	mustExec(t, super, `CREATE VIEW `+ruled+` AS SELECT true AS pgj_call_; ALTER VIEW `+ruled+` OWNER TO `+alice)
	mustExec(t, aliceConn, `CREATE RULE r AS ON INSERT TO `+ruled+` DO INSTEAD NOTHING`)
	if swept, err := sqlschema.CallViewsDrop(ctx, super, []string{ruled}); err != nil || swept.Dropped != 0 || !exists(ruled) {
		t.Fatalf("drop of a view with a rule: %+v, %v; there: %v", swept, err, exists(ruled))
	}
	// The guard runs only a view the owner owns: one a superuser gave another role is refused.
	mustExec(t, super, "ALTER VIEW "+changed.view+" OWNER TO "+pgx.Identifier{bob}.Sanitize())
	if err := runBound(ctx, aliceConn, changed); err == nil || !strings.Contains(err.Error(), "is no longer one pgjobs made for the job's owner "+alice) {
		t.Fatalf("a view of bob's in alice's schema: %v", err)
	}
	// Bound to the job's function only: alice's own view of another function is refused.
	mustExec(t, super, "CREATE VIEW "+schema+".other AS SELECT (prepare_cache()) IS NULL AS pgj_call_; ALTER VIEW "+schema+".other OWNER TO "+alice)
	wantError(t, aliceConn, "SELECT pgjobs.pgj_stamp_(), pgjobs.pgj_job_bind_('pgj_update_job', 'Report', '"+schema+".other')", "22023", "is not a view of role "+alice+"'s call schema calling the job's function")
	mustExec(t, aliceConn, "ROLLBACK")
}

// sortedPair returns a and b in order.
func sortedPair(a, b string) []string {
	if b < a {
		return []string{b, a}
	}
	return []string{a, b}
}

// TestBoundCallsReadNoNameAgain: what the attacker review of schema version 10 did to a call
// stored as text, and what a role that may create in a shared schema could do to a polymorphic
// call, does nothing to a bound call. bob's call names his domain public.code; once he renames it,
// alice makes a domain of that name whose CHECK would run her code as bob: the text would run it,
// the view does not. A type of alice's that bob's call uses, dropped with CASCADE, takes bob's view
// with it, and his job stops saying so. An overload alice adds to a polymorphic function of a
// schema where every role may create is not called in place of bob's.
func TestBoundCallsReadNoNameAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	mustExec(t, super, `CREATE TABLE public.seen (who text, what text);
		GRANT INSERT ON public.seen TO PUBLIC;
		GRANT CREATE ON SCHEMA public TO PUBLIC;
		CREATE FUNCTION public.any_value(v anyelement) RETURNS text LANGUAGE sql AS $$ INSERT INTO public.seen VALUES (current_user, 'any_value'); SELECT 'x' $$`)
	aliceConn, bobConn := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	mustExec(t, bobConn, `CREATE DOMAIN public.code AS text;
		CREATE FUNCTION public.take(c public.code) RETURNS void LANGUAGE sql AS $$ INSERT INTO public.seen VALUES (current_user, 'take') $$;
		SELECT pgj_create_job('Take', 'public.take(''ABC''::public.code)', null, null);
		ALTER DOMAIN public.code RENAME TO code_was`)
	mustExec(t, aliceConn, `CREATE FUNCTION public.spy(t text) RETURNS boolean LANGUAGE sql AS $$ INSERT INTO public.seen VALUES (current_user, 'spy'); SELECT true $$;
		CREATE DOMAIN public.code AS text CHECK (public.spy(VALUE))`)
	take := readBoundJob(t, super, "Take")
	// The text, as a call stored before version 15 would run: alice's CHECK runs as bob.
	mustExec(t, bobConn, "SELECT ("+queryString(t, super, "SELECT jobfunction FROM pgjobs.pgj_job_ WHERE jobname = 'Take'")+") IS NULL")
	if got := queryString(t, super, "SELECT string_agg(who || ' ' || what, ',' ORDER BY what) FROM public.seen"); got != bob+" spy,"+bob+" take" {
		t.Fatalf("the text of bob's call ran: %s", got)
	}
	mustExec(t, super, "DELETE FROM public.seen")
	if err := runBound(ctx, bobConn, take); err != nil {
		t.Fatalf("bob's bound call: %v", err)
	}
	if got := queryString(t, super, "SELECT string_agg(who || ' ' || what, ',') FROM public.seen"); got != bob+" take" {
		t.Fatalf("bob's bound call ran: %s", got)
	}

	// alice's enum under bob's call, dropped with CASCADE, takes his view.
	mustExec(t, aliceConn, `CREATE TYPE public.color AS ENUM ('red');
		CREATE FUNCTION public.paint(c public.color) RETURNS void LANGUAGE sql AS $$ SELECT $$`)
	mustExec(t, bobConn, "SELECT pgj_create_job('Paint', 'public.paint(''red'')', null, null)")
	paint := readBoundJob(t, super, "Paint")
	mustExec(t, aliceConn, `DROP TYPE public.color CASCADE;
		CREATE DOMAIN public.color AS text CHECK (public.spy(VALUE));
		CREATE FUNCTION public.paint(c public.color) RETURNS void LANGUAGE sql AS $$ SELECT $$`)
	mustExec(t, super, "DELETE FROM public.seen")
	if err := runBound(ctx, bobConn, paint); err == nil || !strings.Contains(err.Error(), "the view "+paint.view+" of the job's call is gone") {
		t.Fatalf("bob's call whose type was dropped: %v", err)
	}
	if got := queryString(t, super, "SELECT count(*)::text FROM public.seen"); got != "0" {
		t.Fatalf("ran: %s rows in seen", got)
	}

	// A polymorphic function in public, where alice may create: her better fit is not called.
	mustExec(t, bobConn, "SELECT pgj_create_job('Any', 'public.any_value(1)', null, null)")
	mustExec(t, aliceConn, `CREATE FUNCTION public.any_value(v integer) RETURNS text LANGUAGE sql AS $$ INSERT INTO public.seen VALUES (current_user, 'alice''s any_value'); SELECT 'y' $$`)
	if err := runBound(ctx, bobConn, readBoundJob(t, super, "Any")); err != nil {
		t.Fatalf("bob's polymorphic call: %v", err)
	}
	if got := queryString(t, super, "SELECT string_agg(who || ' ' || what, ',') FROM public.seen"); got != bob+" any_value" {
		t.Fatalf("bob's polymorphic call ran: %s", got)
	}
}

// TestCallSchemaGrantsNothing: default privileges, the superuser's (who makes the call schema,
// the view and the table of arguments, then gives those to the role) or the role's, do not reach a
// call's schema, view or arguments: no other role may look into the schema (and so lock what is
// in it), read the arguments or create there, and the role itself may only use the schema.
func TestCallSchemaGrantsNothing(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	aliceConn := cluster.ConnectAs(t, db, alice)
	for _, conn := range []*pgx.Conn{super, aliceConn} {
		mustExec(t, conn, "ALTER DEFAULT PRIVILEGES GRANT USAGE, CREATE ON SCHEMAS TO PUBLIC, "+pgx.Identifier{bob}.Sanitize()+
			"; ALTER DEFAULT PRIVILEGES GRANT SELECT ON TABLES TO "+pgx.Identifier{bob}.Sanitize())
	}
	mustExec(t, super, "CREATE FUNCTION public.sign_in(who text, secret text) RETURNS void LANGUAGE sql AS ''")
	mustExec(t, aliceConn, "SELECT pgj_create_job('Report', 'public.sign_in(''alice'', ''s3cret'')', null, null)")
	view := readBoundJob(t, super, "Report").view
	schema, _, _ := strings.Cut(view, ".")
	grants := `SELECT coalesce(string_agg(pg_get_userbyid(a.grantee) || ':' || a.privilege_type, ',' ORDER BY 1), '')
		FROM (SELECT c.relacl AS acl, c.relowner AS owner FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		      WHERE n.nspname = $1 AND c.relkind IN ('r', 'v')
		      UNION ALL SELECT nspacl, nspowner FROM pg_namespace WHERE nspname = $1) o, aclexplode(o.acl) a
		WHERE a.grantee <> o.owner`
	if got := queryString(t, super, grants, schema); got != alice+":USAGE" {
		t.Fatalf("grants in alice's call schema to others than their owners: %s", got)
	}
	bobConn := cluster.ConnectAs(t, db, bob)
	wantError(t, bobConn, "BEGIN; LOCK "+view+" IN ACCESS EXCLUSIVE MODE; COMMIT", "42501", "permission denied for schema "+schema)
	mustExec(t, bobConn, "ROLLBACK")
	wantError(t, aliceConn, "CREATE VIEW "+schema+".mine AS SELECT 1", "42501", "permission denied for schema "+schema)
}

// TestCallSchemaOfAnotherRole: a schema of the name of alice's call schema that bob made before
// her first job is refused, saying whose it is: her views never go where bob may create.
func TestCallSchemaOfAnotherRole(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	mustExec(t, super, "GRANT CREATE ON DATABASE "+pgx.Identifier{db}.Sanitize()+" TO "+pgx.Identifier{bob}.Sanitize())
	schema := "pgjobs_call_" + queryString(t, super, "SELECT oid::text FROM pg_roles WHERE rolname = $1", alice)
	mustExec(t, cluster.ConnectAs(t, db, bob), "CREATE SCHEMA "+schema+"; GRANT ALL ON SCHEMA "+schema+" TO PUBLIC")
	wantError(t, cluster.ConnectAs(t, db, alice), "SELECT pgj_create_job('Report', 'off_line()', null, null)", "42501",
		"pgj_create_job: schema "+schema+", where the calls of role "+alice+"'s jobs go, is owned by role "+bob+", which is no superuser")
}

// TestRunGuardWarmRunsBothGuards: the warming of a new owner session runs the guard of the calls
// set before schema version 15, then the view guard (whose refusal there does not count), so that
// neither is compiled at a busy minute.
func TestRunGuardWarmRunsBothGuards(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	oid := queryString(t, super, "SELECT oid::text FROM pg_roles WHERE rolname = $1", alice)
	wantError(t, cluster.ConnectAs(t, db, alice), sqlschema.RunGuardWarmSQL(), "42P01", "the view pgjobs_call_"+oid+".call_ of the job's call is gone")
	if err := sqlschema.RunGuardWarm(context.Background(), cluster.ConnectAs(t, db, alice)); err != nil {
		t.Fatal(err)
	}
}
