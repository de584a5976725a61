package sqlschema_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// Since schema version 16 the arguments of a bound call are evaluated once, when the call is set,
// and kept in a table of the owner's call schema that only superusers and the owner read: the
// view's rule, which every role reads, holds none of them but reg* values, by OID.

// TestArgumentsAreKeptAsValues: bob reads nothing of alice's arguments, from the views' rules nor
// from their tables; her runs pass the values her session read when she set the calls (her
// DateStyle, her named, VARIADIC and polymorphic arguments), and a reg* argument pins its table.
func TestArgumentsAreKeptAsValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	mustExec(t, super, `CREATE TABLE public.got (what text);
		GRANT INSERT ON public.got TO PUBLIC;
		CREATE TYPE public.pair AS (a int, b text);
		CREATE FUNCTION public.sign_in(who text, secret text, day date, n bigint, p public.pair, t regclass, VARIADIC xs int[])
			RETURNS void LANGUAGE sql AS $$ INSERT INTO public.got VALUES (concat_ws(' ', who, secret, day, n, p, t::oid = 'public.got'::regclass, xs)) $$;
		CREATE FUNCTION public.either(a anycompatible, b anycompatible, tag text DEFAULT 'none')
			RETURNS void LANGUAGE sql AS $$ INSERT INTO public.got VALUES (concat_ws(' ', a, pg_typeof(a), b, tag)) $$;
		CREATE FUNCTION public.raw(b bit, c character) -- no length: bit(1) and character(1) when a column or a cast is written so
			RETURNS void LANGUAGE sql AS $$ INSERT INTO public.got VALUES (concat_ws(' ', 'raw', b, c)) $$`)
	aliceConn, bobConn := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	mustExec(t, aliceConn, `SET DateStyle = 'German, DMY';
		SELECT pgj_create_job('SignIn', 'public.sign_in(''alice'', ''s3cret'', ''01.02.2024'', 3, ''(1,x)'', ''public.got'', 1, 2)', null, null);
		SELECT pgj_create_job('Either', 'public.either(1, 2.5, tag => ''s3cret too'')', null, null);
		SELECT pgj_create_job('Bare', 'off_line()', null, null);
		SELECT pgj_create_job('Raw', 'public.raw(B''101'', ''abc'')', null, null)`)
	for _, job := range []string{"SignIn", "Either", "Bare", "Raw"} {
		if err := runBound(ctx, cluster.ConnectAs(t, db, alice), readBoundJob(t, super, job)); err != nil {
			t.Fatalf("alice's %s: %v", job, err)
		}
	}
	if got := queryString(t, super, "SELECT string_agg(what, ' | ' ORDER BY what) FROM public.got"); got != "1 numeric 2.5 s3cret too | alice s3cret 2024-02-01 3 (1,x) t {1,2} | raw 101 abc" {
		t.Fatalf("the runs passed: %s", got)
	}

	// Every view of a call, as bob reads them: no secret, in the text or in the rule's bytes.
	var defs, rules string
	if err := bobConn.QueryRow(ctx, `SELECT string_agg(pg_get_viewdef(c.oid), ' '), string_agg(r.ev_action::text, ' ')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_rewrite r ON r.ev_class = c.oid
		WHERE n.nspname ~ '^pgjobs_call_'`).Scan(&defs, &rules); err != nil {
		t.Fatal(err)
	}
	const secretBytes = "115 51 99 114 101 116" // s3cret
	if strings.Contains(defs, "s3cret") || strings.Contains(rules, secretBytes) || !strings.Contains(defs, "sign_in(a.a1, a.a2, a.a3, a.a4, a.a5, 'got'::regclass, VARIADIC a.a6)") {
		t.Fatalf("the views' rules, as bob reads them: %s", defs)
	}
	signIn := readBoundJob(t, super, "SignIn")
	schema, _, _ := strings.Cut(signIn.view, ".")
	table := queryString(t, super, `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname ~ '^args_' AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'a6')`, schema)
	wantError(t, bobConn, "SELECT * FROM "+table, "42501", "permission denied for schema "+schema)
	// a superuser, and alice, read them
	if got := queryString(t, super, "SELECT a2 FROM "+table); got != "s3cret" {
		t.Fatalf("the arguments kept: %s", got)
	}
	if got := queryString(t, aliceConn, "SELECT a2 FROM "+table); got != "s3cret" {
		t.Fatalf("alice reads her arguments: %s", got)
	}
	// the table of a reg* argument may not be dropped from under the call
	wantError(t, super, "DROP TABLE public.got", "2BP01", "cannot drop table got because other objects depend on it")

	// Set again, the call's former view goes with its row of arguments; a table no view reads
	// any more goes (the view of Raw went with its function, dropped with CASCADE); once all of
	// alice's jobs are dropped and her views and tables gone (DROP OWNED BY), her schema goes too.
	mustExec(t, aliceConn, "SELECT pgj_update_job('SignIn', null, 'public.sign_in(''alice'', ''n3w'', ''2024-03-01'', 4, null, null, 7)', null)")
	rawTable := queryString(t, super, `SELECT t.relnamespace::regnamespace || '.' || t.relname FROM pg_depend d JOIN pg_rewrite r ON d.objid = r.oid
		JOIN pg_class t ON t.oid = d.refobjid WHERE r.ev_class = $1::regclass AND t.relname ~ '^args_'`, readBoundJob(t, super, "Raw").view)
	mustExec(t, super, "DROP FUNCTION public.raw(bit, character) CASCADE")
	orphans, err := sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil || strings.Join(orphans, " ") != strings.Join(sortedPair(rawTable, signIn.view), " ") {
		t.Fatalf("orphans after the update: %v, %v", orphans, err)
	}
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept.Dropped != 2 || queryString(t, super, "SELECT (to_regclass($1) IS NULL)::text", rawTable) != "true" {
		t.Fatalf("drop: %+v, %v", swept, err)
	}
	if got := queryString(t, super, "SELECT string_agg(a2, ',' ORDER BY a2) FROM "+table); got != "n3w,s3cret" {
		t.Fatalf("arguments left after the drop: %s", got)
	}
	// the row of the former call goes at alice's next call, as alice
	mustExec(t, aliceConn, "SELECT pgj_create_job('Bare2', 'off_line()', null, null)")
	if got := queryString(t, super, "SELECT string_agg(a2, ',') FROM "+table); got != "n3w" {
		t.Fatalf("arguments left after alice's next call: %s", got)
	}
	mustExec(t, super, "SELECT pgj_drop_job(name) FROM pgj_jobs WHERE owner = '"+alice+"'; DROP OWNED BY "+pgx.Identifier{alice}.Sanitize())
	if orphans, err = sqlschema.CallViewsOrphaned(ctx, super); err != nil || strings.Join(orphans, " ") != schema {
		t.Fatalf("orphans after DROP OWNED: %v, %v", orphans, err)
	}
	if _, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, super, "SELECT count(*)::text FROM pg_namespace WHERE nspname = $1", schema); got != "0" {
		t.Fatalf("alice's call schema: %s left", got)
	}
}

// TestArgumentsRunNoCodeAsTheSuperuser: the table of alice's arguments is hers, so that what
// runs as its owner (ANALYZE runs a range type's subtype_diff: the attacker review of version 16
// had autovacuum make alice a superuser) runs as alice; the agent deletes the row of a former call
// only from a table where that runs none of her code (a trigger she adds keeps the row there);
// and she cannot keep, by OID, a reg* value that pins another role's call view.
func TestArgumentsRunNoCodeAsTheSuperuser(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	mustExec(t, super, "CREATE SCHEMA alices AUTHORIZATION "+pgx.Identifier{alice}.Sanitize()+`;
		CREATE TABLE public.seen (who text, what text); GRANT INSERT ON public.seen TO PUBLIC`)
	aliceConn := cluster.ConnectAs(t, db, alice)
	mustExec(t, aliceConn, `CREATE FUNCTION alices.note() RETURNS void LANGUAGE sql VOLATILE AS $$ INSERT INTO public.seen VALUES (current_user, 'diff') $$;
		CREATE FUNCTION alices.diff(a int4, b int4) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM alices.note(); RETURN (a - b)::float8; END $$;
		CREATE TYPE alices.r AS RANGE (subtype = int4, subtype_diff = alices.diff);
		CREATE FUNCTION alices.job(x alices.r) RETURNS void LANGUAGE sql AS $$ SELECT $$;
		SELECT pgj_create_job('R', 'alices.job(''[1,5)'')', null, null)`)
	r := readBoundJob(t, super, "R")
	table := queryString(t, super, `SELECT t.relnamespace::regnamespace || '.' || t.relname FROM pg_depend d JOIN pg_rewrite w ON d.objid = w.oid
		JOIN pg_class t ON t.oid = d.refobjid WHERE w.ev_class = $1::regclass AND t.relname ~ '^args_'`, r.view)
	mustExec(t, super, "INSERT INTO "+table+" SELECT md5(g::text), ('['||g||','||(g+5)||')')::alices.r FROM generate_series(1, 200) g; ANALYZE "+table)
	if got := queryString(t, super, "SELECT string_agg(DISTINCT who, ',') FROM public.seen"); got != alice {
		t.Fatalf("ANALYZE of alice's arguments ran her subtype_diff as %s", got)
	}
	mustExec(t, super, "DELETE FROM public.seen")

	// The agent reads, writes and plans no query over alice's table: a trigger of hers, and an
	// expression of a statistics object of hers, which the planner folds (the second attacker
	// review of version 16 made her superuser both ways), never run as the superuser. The row of
	// her former call goes at her next call, as alice.
	mustExec(t, aliceConn, `CREATE FUNCTION alices.t() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN INSERT INTO public.seen VALUES (current_user, TG_OP); RETURN OLD; END $$;
		CREATE FUNCTION alices.folded(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
			BEGIN PERFORM alices.note(); RETURN t; END $$;
		CREATE TRIGGER t BEFORE DELETE ON `+table+` FOR EACH ROW EXECUTE FUNCTION alices.t();
		CREATE STATISTICS alices.folded ON (id || alices.folded('x')), id FROM `+table+`;
		SELECT pgj_update_job('R', null, 'alices.job(''[2,6)'')', null)`)
	if swept, err := sqlschema.CallViewsDrop(ctx, super, []string{r.view}); err != nil || swept.Dropped != 1 {
		t.Fatalf("drop: %+v, %v", swept, err)
	}
	former := strings.TrimPrefix(r.view, strings.Split(r.view, ".")[0]+".call_")
	// (counted by alice: a superuser's own query on her table would fold her expression as the superuser)
	if got := queryString(t, aliceConn, "SELECT count(*)::text FROM "+table+" WHERE id = $1", former); got != "1" {
		t.Fatalf("the former call's row after the agent's drop: %s left", got)
	}
	mustExec(t, aliceConn, "SELECT pgj_create_job('R2', 'alices.job(''[3,7)'')', null, null)")
	if got := queryString(t, aliceConn, "SELECT count(*)::text FROM "+table+" WHERE id = $1", former); got != "0" {
		t.Fatalf("the former call's row after alice's next call: %s left", got)
	}
	if got := queryString(t, super, "SELECT coalesce(string_agg(DISTINCT who || ' ' || what, ','), '') FROM public.seen WHERE who <> $1 OR what = 'DELETE'", alice); got != alice+" DELETE" {
		t.Fatalf("alice's code ran as: %s", got)
	}

	// The agent locks a former view alone: one whose rule alice rewrote to read a table another
	// session holds is dropped all the same (LOCK TABLE on the view would have locked that table
	// too, as the superuser: the third attacker review of version 16).
	mustExec(t, super, "CREATE TABLE public.held (a int); GRANT SELECT ON public.held TO PUBLIC")
	mustExec(t, aliceConn, "SELECT pgj_update_job('R', null, 'alices.job(''[5,9)'')', null)")
	rewritten := queryString(t, super, "SELECT view FROM pgjobs.pgj_jobs WHERE name = 'R'")
	mustExec(t, aliceConn, "SELECT pgj_update_job('R', null, 'alices.job(''[6,10)'')', null); "+
		`CREATE OR REPLACE RULE "_RETURN" AS ON SELECT TO `+rewritten+` DO INSTEAD SELECT true AS pgj_call_ FROM public.held`)
	holding, err := cluster.Connect(t, db).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holding.Rollback(ctx)
	if _, err := holding.Exec(ctx, "LOCK TABLE public.held IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	// (set aside, it is dropped once the transaction open then has ended)
	if swept, err := sqlschema.CallViewsDrop(ctx, super, []string{rewritten}); err != nil || swept.Aside != 1 || swept.Waiting != 1 {
		t.Fatalf("drop of a view whose rule reads a table another session holds: %+v, %v", swept, err)
	}
	if err := holding.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if swept := sweepAgain(t, super); swept.Dropped < 1 || queryString(t, super, "SELECT count(*)::text FROM pg_class WHERE relname = $1", strings.Split(rewritten, ".")[1]) != "0" {
		t.Fatalf("drop of the view set aside, once the transaction ended: %+v", swept)
	}

	// A rule of alice's that takes the row of her arguments fails her call, saying so: her job
	// would run nothing.
	mustExec(t, aliceConn, "CREATE RULE keep AS ON INSERT TO "+table+" DO INSTEAD NOTHING")
	wantError(t, aliceConn, "SELECT pgj_create_job('R3', 'alices.job(''[4,8)'')', null, null)", "55000", "its arguments were not kept: 0 rows went into "+table)

	// An object pinned by OID through the internal function is refused: a call view, bob's or her
	// own, and a table of a schema alice may not use.
	mustExec(t, cluster.ConnectAs(t, db, bob), "SELECT pgj_create_job('Bobs', 'off_line()', null, null)")
	mustExec(t, super, "CREATE SCHEMA hidden; CREATE TABLE hidden.t (a int)")
	for view, refusal := range map[string]string{
		readBoundJob(t, super, "Bobs").view: "names an object of a call schema",
		readBoundJob(t, super, "R").view:    "names an object of a call schema",
		"hidden.t":                          "names an object of schema hidden, which role " + alice + " may not use",
		"pgjobs.pgj_job_":                   "names an object of pgjobs",
	} {
		wantError(t, aliceConn, "SELECT pgjobs.pgj_stamp_(), pgjobs.pgj_call_store_('pgj_create_job', 'pg_catalog.pg_relation_size(regclass)'::regprocedure, '{NULL}', false, "+
			"ARRAY['regclass'::regtype::oid], ARRAY["+queryString(t, super, "SELECT $1::regclass::oid::text", view)+"]::oid[])", "42501", refusal)
	}
}

// TestStoredArgumentsAreChecked: pgj_call_store_, called directly, makes a view only of a
// function its caller may execute, of argument types it may use, definite and lasting, and of as
// many names and reg* values as types.
func TestStoredArgumentsAreChecked(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	mustExec(t, super, `CREATE FUNCTION public.take(x text) RETURNS void LANGUAGE sql AS '';
		CREATE FUNCTION public.secret(x text) RETURNS void LANGUAGE sql AS ''; REVOKE EXECUTE ON FUNCTION public.secret(text) FROM PUBLIC`)
	aliceConn := cluster.ConnectAs(t, db, alice)
	for _, c := range []struct{ function, types, regs, code, text string }{
		{"public.secret(text)", "ARRAY['text'::regtype::oid]", "'{NULL}'", "42501", "is none the caller may execute"},
		{"public.take(text)", "ARRAY['text'::regtype::oid]", "'{}'", "22023", "1 argument types but 1 names and 0 reg* values"},
		{"public.take(text)", "ARRAY['anyelement'::regtype::oid]", "'{NULL}'", "22023", "an argument of type anyelement cannot be kept"},
		{"public.take(text)", "ARRAY['aclitem'::regtype::oid]", "'{NULL}'", "22023", "an argument of type aclitem cannot be kept"},
	} {
		_, err := aliceConn.Exec(context.Background(), "SELECT pgjobs.pgj_stamp_(), pgjobs.pgj_call_store_('pgj_create_job', '"+c.function+
			"'::regprocedure, '{NULL}', false, "+c.types+", "+c.regs+")")
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != c.code || !strings.Contains(pgErr.Message, c.text) {
			t.Errorf("store of %s %s %s: %v, want %s %q", c.function, c.types, c.regs, err, c.code, c.text)
		}
	}
}

// TestUpgradeToHiddenArguments: the upgrade to version 16 gives each call schema of version 15 to
// the superuser, with USAGE for its role only (which may no longer create there), keeps the calls
// bound by version 15 running, and warns of each, whose arguments stay in its view's rule until
// its owner sets the call again; set again, they are kept as values.
func TestUpgradeToHiddenArguments(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	config, err := cluster.ConnConfig(db)
	if err != nil {
		t.Fatal(err)
	}
	var warnings []string
	config.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if n.Severity == "WARNING" {
			warnings = append(warnings, n.Message)
		}
	}
	super, err := pgx.ConnectConfig(ctx, config)
	if err != nil {
		t.Fatal(err)
	}
	defer super.Close(ctx)
	if err := sqlschema.InstallVersion(ctx, super, 15); err != nil {
		t.Fatal(err)
	}
	alice := cluster.NewRole(t, "alice", db)
	mustExec(t, super, "SET search_path = public, pgjobs; "+userFunctions+"CREATE FUNCTION public.sign_in(secret text) RETURNS void LANGUAGE sql AS $$ INSERT INTO calls (name) VALUES (secret) $$")
	aliceConn := cluster.ConnectAs(t, db, alice)
	mustExec(t, aliceConn, "SET search_path = public, pgjobs; SELECT pgj_create_job('SignIn', 'public.sign_in(''s3cret'')', null, null)")
	before := readBoundJob(t, super, "SignIn")
	schema, _, _ := strings.Cut(before.view, ".")
	if from, to, err := sqlschema.Upgrade(ctx, super); err != nil || from != 15 || to != sqlschema.Latest() {
		t.Fatalf("Upgrade = %d, %d, %v", from, to, err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "job SignIn of role "+alice+": the arguments of its call are in the rule of view "+before.view) {
		t.Fatalf("warnings: %q", warnings)
	}
	if got := queryString(t, super, "SELECT pg_get_userbyid(nspowner)::text FROM pg_namespace WHERE nspname = $1", schema); got != cluster.User() {
		t.Fatalf("alice's call schema is owned by %s", got)
	}
	wantError(t, aliceConn, "CREATE VIEW "+schema+".mine AS SELECT 1", "42501", "permission denied for schema "+schema)
	if err := runBound(ctx, cluster.ConnectAs(t, db, alice), before); err != nil {
		t.Fatalf("the call bound by version 15: %v", err)
	}
	mustExec(t, aliceConn, "SELECT pgj_update_job('SignIn', null, 'public.sign_in(''n3w'')', null)")
	after := readBoundJob(t, super, "SignIn")
	if def := queryString(t, super, "SELECT pg_get_viewdef($1::regclass)", after.view); strings.Contains(def, "n3w") {
		t.Fatalf("the call set again: %s", def)
	}
	if err := runBound(ctx, cluster.ConnectAs(t, db, alice), after); err != nil {
		t.Fatalf("the call set again: %v", err)
	}
	if got := queryString(t, super, "SELECT string_agg(name, ',' ORDER BY at, name) FROM calls"); got != "s3cret,n3w" {
		t.Fatalf("runs: %s", got)
	}
}
