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

// The names a stored call gives are looked up again at each run: what a call names must be found
// again as it was when the call was set (docs/security.md, schema versions 9 and 10).

// TestTemporaryObjectsAreRefused: a call may use nothing of a temporary schema, even through what
// it names. A type of the caller's own is written back by its bare name, which the run would look
// up in the owner's search path, where another role may have made a domain of that name; another
// session's temporary schema is taken later by whichever session gets it. The guard refuses a
// function of a temporary schema in a call stored before version 9.
func TestTemporaryObjectsAreRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	mustExec(t, super, `CREATE FUNCTION public.show(t text) RETURNS text LANGUAGE sql AS $$ SELECT t $$;
		CREATE FUNCTION public.any_array(v anyarray) RETURNS text LANGUAGE sql AS $$ SELECT v::text $$;
		CREATE FUNCTION public.any_value(v anyelement) RETURNS text LANGUAGE sql AS $$ SELECT v::text $$;
		CREATE FUNCTION public.procedure_of(p regprocedure) RETURNS text LANGUAGE sql AS $$ SELECT p::text $$;
		CREATE SCHEMA own AUTHORIZATION `+pgx.Identifier{alice}.Sanitize())
	conn := cluster.ConnectAs(t, db, alice)
	mustExec(t, conn, `CREATE DOMAIN pg_temp.tdom AS text;
		CREATE TABLE pg_temp.ttab (a int);
		CREATE FUNCTION pg_temp.tshow(t text) RETURNS text LANGUAGE sql AS $$ SELECT t $$;
		CREATE FUNCTION own.of_temp(pg_temp.tdom) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$;
		CREATE TYPE own.span AS RANGE (subtype = int, multirange_type_name = pg_temp.spans)`)
	aliceTemp := queryString(t, conn, "SELECT pg_my_temp_schema()::regnamespace::text")
	for _, tt := range []struct{ name, call, names string }{
		{"cast", `public.show('x'::pg_temp.tdom)`, "type pg_temp.tdom"},
		{"cast, unqualified", `public.show('x'::tdom)`, "type pg_temp.tdom"},
		{"regtype", `public.show('tdom'::regtype::text)`, "type pg_temp.tdom"},
		{"regclass", `public.show('ttab'::regclass::text)`, "table pg_temp.ttab"},
		{"function", `pg_temp.tshow('x')`, "function " + aliceTemp + ".tshow(pg_catalog.text)"},
		// Found by the review of version 9: no dependency of the view on the temporary type.
		{"empty array", `public.any_array(ARRAY[]::pg_temp.tdom[])`, "type pg_temp.tdom, type pg_temp.tdom[]"},
		{"empty array, variadic", `public.any_array(VARIADIC ARRAY[]::tdom[])`, "type pg_temp.tdom, type pg_temp.tdom[]"},
		{"nested empty array", `public.any_array(ARRAY[ARRAY[]::tdom[]])`, "type pg_temp.tdom, type pg_temp.tdom[]"},
		// A function that goes with the session: it takes a parameter of a temporary type.
		{"function of a temporary type", `public.procedure_of('own.of_temp(pg_temp.tdom)')`, "type pg_temp.tdom"},
		{"namespace", `public.show('` + aliceTemp + `'::regnamespace::text)`, "schema pg_temp"},
		// Found by the review of version 10: a range that lasts goes with its temporary multirange.
		{"range of a temporary multirange", `public.any_value('[1,2]'::own.span)`, "type pg_temp.spans"},
	} {
		wantError(t, conn, "SELECT pgjobs.pgj_create_job('J', "+quoteLiteral(tt.call)+", null, null)",
			"22023", "pgj_create_job: argument 2 (function call) "+quoteLiteral(tt.call)+" uses "+tt.names)
	}
	mustExec(t, conn, "SELECT pgjobs.pgj_create_job('J', 'public.show(''x'')', null, null)")
	wantError(t, conn, "SELECT pgjobs.pgj_update_job('J', null, 'public.show(''x''::tdom)', null)",
		"22023", "pgj_update_job: argument 3 (function call) 'public.show(''x''::tdom)' uses type pg_temp.tdom")
	if got := queryString(t, conn, "SELECT function FROM pgjobs.pgj_jobs WHERE name = 'J'"); got != "public.show('x'::text)" {
		t.Fatalf("J's call after the refused change = %s, want it unchanged", got)
	}
	// Another session's temporary schema: only a superuser may use it.
	wantError(t, super, "SELECT pgj_create_job('S', 'public.show(''x''::"+aliceTemp+".tdom)', null, null)",
		"22023", "uses type "+aliceTemp+".tdom")

	var owner, funcOID uint32
	if err := conn.QueryRow(ctx, "SELECT current_user::regrole::oid, 'pg_temp.tshow(text)'::regprocedure::oid").Scan(&owner, &funcOID); err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{aliceTemp, "pg_temp", "pg_toast_temp_1"} {
		_, err := conn.Exec(ctx, "SELECT pgjobs.pgj_run_check_($1, $2, $3, $4, 'tshow', false)", owner, alice, funcOID, schema)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != "3F000" || !strings.Contains(pgErr.Message, "temporary schema "+schema) {
			t.Fatalf("guard for a function of %s: %v, want 3F000 naming the temporary schema", schema, err)
		}
	}
}

// TestNamesHeldInValues: a reg* value inside an array, a row or a range records no dependency on
// what it names, and is written back as text the run reads again ('{ttab}'::regclass[] for a
// temporary table): such a call is refused, while a reg* constant of its own, whose object is
// checked, and arrays, rows and ranges of other types are not.
func TestNamesHeldInValues(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	mustExec(t, super, `CREATE FUNCTION public.any_value(v anyelement) RETURNS text LANGUAGE sql AS $$ SELECT v::text $$;
		CREATE TYPE public.target AS (tab regclass, keep int);
		CREATE TYPE public.pair AS (a text, b int);
		CREATE DOMAIN public.tables AS regclass[];
		CREATE DOMAIN public.one_table AS regclass;
		CREATE FUNCTION public.one(t public.one_table) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$;
		CREATE TABLE public.pg_temp (a int);
		CREATE TABLE public.orders (a int);
		CREATE TYPE public.tables_range AS RANGE (subtype = regclass, multirange_type_name = public.tables_ranges);
		CREATE FUNCTION public.one_table_of(t regclass) RETURNS text LANGUAGE sql AS $$ SELECT t::text $$;
		CREATE FUNCTION public.some_tables(t regclass[] DEFAULT NULL) RETURNS regclass[] LANGUAGE sql AS $$ SELECT t $$`)
	conn := cluster.ConnectAs(t, db, cluster.NewRole(t, "alice", db))
	mustExec(t, conn, `CREATE TABLE pg_temp.ttab (a int)`)
	for _, tt := range []struct{ name, call, want string }{
		{"array", `public.any_value('{ttab}'::regclass[])`, "passes regclass values"},
		{"array of a table that lasts", `public.any_value('{public.orders}'::regclass[])`, "passes regclass values"},
		{"row", `public.any_value('(ttab,1)'::public.target)`, "passes regclass values"},
		{"domain over an array", `public.any_value('{ttab}'::public.tables)`, "passes regclass values"},
		{"procedures", `public.any_value('{"pg_catalog.upper(text)"}'::regprocedure[])`, "passes regprocedure values"},
		{"roles", `public.any_value('{pg_monitor}'::regrole[])`, "passes regrole values"},
		// Found by the review of version 12: text made a regclass at each run.
		{"text to regclass", `public.one_table_of('ttab'::text)`, "makes regclass values from text"},
		{"varchar to regclass", `public.one_table_of('ttab'::varchar)`, "makes regclass values from text"},
		{"regclass to text", `public.any_value('public.orders'::regclass::text)`, ""},
		{"scalar of a temporary table", `public.any_value('ttab'::regclass)`, "uses table pg_temp.ttab"},
		// Found by the review of version 10: a multirange holds its range's values.
		{"multirange", `public.any_value('{[ttab,ttab]}'::public.tables_ranges)`, "passes regclass values"},
		{"scalar", `public.any_value('public.orders'::regclass)`, ""},
		{"returned, not passed", `public.some_tables()`, ""},
		{"NULL", `public.some_tables(NULL)`, ""},
		{"domain over a scalar", `public.any_value('public.orders'::public.one_table)`, ""},
		{"array of text", `public.any_value(ARRAY['a', 'b'])`, ""},
		{"row of text", `public.any_value('(x,1)'::public.pair)`, ""},
		{"range", `public.any_value('[1,2)'::int4range)`, ""},
	} {
		if tt.want == "" {
			mustExec(t, conn, "SELECT pgjobs.pgj_create_job("+quoteLiteral(tt.name)+", "+quoteLiteral(tt.call)+", null, null)")
			continue
		}
		wantError(t, conn, "SELECT pgjobs.pgj_create_job('J', "+quoteLiteral(tt.call)+", null, null)",
			"22023", "pgj_create_job: argument 2 (function call) "+quoteLiteral(tt.call)+" "+tt.want)
	}
}

// TestUpgradeFindsLostNames: the upgrade (version 14) stops the jobs stored before
// version 9 whose call names an object of a temporary schema, the jobs stored before version 13
// that make reg* values at each run, and those that hold reg* values in a domain's array or in a
// row, and leaves every other call alone, the built-in types' SQL spellings and reg* constants of
// pg_catalog's and public's objects included.
func TestUpgradeFindsLostNames(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	super := cluster.Connect(t, db)
	if err := sqlschema.InstallVersion(ctx, super, 8); err != nil {
		t.Fatal(err)
	}
	alice := cluster.NewRole(t, "alice", db)
	mustExec(t, super, `CREATE FUNCTION public.any_value(v anyelement) RETURNS text LANGUAGE sql AS $$ SELECT v::text $$;
		CREATE FUNCTION public.mix(a double precision, b varchar(10), c timestamp(3) with time zone, d bit(3), e int[], f "char", g time, h interval)
			RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$;
		CREATE TABLE public.orders (a int);
		CREATE TABLE public.pg_temperature (a int);
		CREATE DOMAIN public.one_table AS regclass;
		CREATE FUNCTION public.one(t public.one_table) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$;
		CREATE TABLE public.pg_temp (a int);
		CREATE TYPE public.reg_row AS (t regclass);
		CREATE SCHEMA "it's::tdom";
		CREATE FUNCTION "it's::tdom".f(t text) RETURNS text LANGUAGE sql AS $$ SELECT t $$;
		GRANT USAGE ON SCHEMA "it's::tdom" TO PUBLIC;
		CREATE SCHEMA own AUTHORIZATION `+pgx.Identifier{alice}.Sanitize())
	conn := cluster.ConnectAs(t, db, alice)
	mustExec(t, conn, `CREATE DOMAIN pg_temp.tdom AS text;
		CREATE TABLE pg_temp.stage (a int);
		CREATE TYPE pg_temp."My T" AS (a int);
		CREATE DOMAIN pg_temp.double AS text;
		CREATE DOMAIN pg_temp.isbn AS text;
		CREATE FUNCTION own.of_temp(pg_temp.tdom) RETURNS text LANGUAGE sql AS $$ SELECT 'x' $$`)
	tempSchema := queryString(t, conn, "SELECT pg_my_temp_schema()::regnamespace::text")
	lost := map[string]string{
		"Cast":       `public.any_value('x'::pg_temp.tdom)`,
		"Empty":      `public.any_value(ARRAY[]::pg_temp.tdom[])`,
		"Quoted":     `public.any_value('(1)'::pg_temp."My T")`,
		"Double":     `public.any_value('x'::pg_temp.double)`,
		"Table":      `public.any_value('pg_temp.stage'::regclass)`,
		"Tables":     `public.any_value('{public.orders,pg_temp.stage}'::regclass[])`,
		"Procedure":  `public.any_value('own.of_temp(pg_temp.tdom)'::regprocedure)`,
		"TempSchema": `public.any_value('` + tempSchema + `'::regnamespace)`,
		// found since schema version 14
		"SecondSchema": `public.any_value('{public,` + tempSchema + `}'::regnamespace[])`,
		"TextToTable":  `public.any_value(('stage'::text)::regclass)`,
		"DomainArray":  `public.any_value('{stage}'::public.one_table[])`,
		"Row":          `public.any_value('(orders)'::public.reg_row)`,
		// a type of pg_catalog that is no built-in one (an extension's, which a role with CREATE on
		// the database may install there, and drop again after the upgrade, to take the name)
		"Extension": `public.any_value('978'::pg_temp.isbn)`,
	}
	// a superuser's call may name a type of another session's temporary schema, which is written
	// with that schema's name
	otherSession := map[string]string{
		"OtherSession": `public.any_value('x'::` + tempSchema + `.tdom)`,
	}
	kept := map[string]string{
		"Plain":        `public.any_value('x'::text)`,
		"QuotedName":   `"it's::tdom".f('x::tdom')`,
		"Spellings":    `public.mix(0.5, 'ab', '2026-01-01 10:00', B'101', ARRAY[1, 2], 'c', '10:00', '1 day')`,
		"Catalog":      `public.any_value('pg_class'::regclass)`,
		"Qualified":    `public.any_value('public.orders'::regclass)`,
		"Types":        `public.any_value('{integer,text}'::regtype[])`,
		"Quote":        `public.any_value('it''s ::tdom'::text)`,
		"Config":       `public.any_value('english'::regconfig)`,
		"Range":        `public.any_value('[1,2)'::int4range)`,
		"QuotedChar":   `public.any_value('c'::"char")`,
		"Numeric":      `public.any_value(1.5::numeric(4,2))`,
		"Float":        `public.any_value(0.5::double precision)`,
		"NullTable":    `public.any_value(NULL::regclass)`,
		"DomainTables": `public.any_value('{public.orders}'::public.one_table[])`,
		"TableDomain":  `public.any_value(('public.orders'::regclass)::public.one_table)`,
		"Number":       `public.any_value(1259::regclass)`,
		"NullRow":      `public.any_value(NULL::public.reg_row)`,
		"TempLike":     `public.any_value('public.pg_temperature'::regclass)`,
		"NullDomain":   `public.one(NULL)`,
		"TableTemp":    `public.any_value('public.pg_temp'::regclass)`,
		"NoTable":      `public.any_value('-'::regclass)`,
	}
	for _, jobs := range []map[string]string{lost, kept} {
		for name, call := range jobs {
			mustExec(t, conn, "SELECT pgjobs.pgj_create_job("+quoteLiteral(name)+", "+quoteLiteral(call)+", null, null)")
		}
	}
	for name, call := range otherSession {
		mustExec(t, super, "SELECT pgjobs.pgj_create_job("+quoteLiteral(name)+", "+quoteLiteral(call)+", null, null)")
		lost[name] = call
	}
	// A call stored through the internal functions is as its role wrote it: a dollar-quoted string
	// whose text reads as a cast to what is no type name stops that job, not the upgrade.
	// So is a spelling PostgreSQL does not write back: the reg* input functions fold unquoted names
	// to lower case, so another session's temporary objects hide behind capitals.
	for name, call := range map[string]string{
		"Dollar":      "public.any_value($$::select $$)",
		"UpperTable":  "public.any_value('" + strings.ToUpper(tempSchema) + ".stage'::regclass)",
		"UpperSchema": "public.any_value('{public," + strings.ToUpper(tempSchema) + "}'::regnamespace[])",
		"UpperType":   "public.any_value('x'::" + strings.ToUpper(tempSchema) + ".tdom)",
	} {
		mustExec(t, conn, "SELECT pgjobs.pgj_stamp_(), pgjobs.pgj_job_create_('pgj_create_job', "+quoteLiteral(name)+", "+quoteLiteral(call)+
			", 'public.any_value(anyelement)'::regprocedure, null, null, false)")
		lost[name] = call
	}
	mustExec(t, super, "CREATE DOMAIN pg_catalog.isbn AS text") // as CREATE EXTENSION isn SCHEMA pg_catalog would
	t.Cleanup(func() { _, _ = super.Exec(context.Background(), "DROP DOMAIN pg_catalog.isbn") })
	if from, to, err := sqlschema.Upgrade(ctx, super); err != nil || from != 8 || to != sqlschema.Latest() {
		t.Fatalf("Upgrade = %d, %d, %v", from, to, err)
	}
	for _, c := range []struct {
		jobs    map[string]string
		stopped bool
	}{{lost, true}, {kept, false}} {
		for name := range c.jobs {
			var call string
			var stopped bool
			if err := super.QueryRow(ctx, "SELECT jobfunction, jobfuncoid IS NULL FROM pgjobs.pgj_job_ WHERE jobname = $1", name).Scan(&call, &stopped); err != nil {
				t.Fatal(err)
			}
			if stopped != c.stopped {
				t.Errorf("job %s, stored as %s: stopped by the upgrade %v, want %v", name, call, stopped, c.stopped)
			}
		}
	}
}

// TestConstantsReadTheSame: a call's constants are written back in forms every session reads the
// same, whatever the caller's DateStyle, IntervalStyle and extra_float_digits (the review of schema
// version 10 had '2026-01-02' set under 'SQL, DMY' run as 1 February), and the caller's settings
// are as they were after.
func TestConstantsReadTheSame(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	mustExec(t, super, `CREATE FUNCTION public.any_value(v anyelement) RETURNS text LANGUAGE sql AS $$ SELECT v::text $$`)
	conn := cluster.ConnectAs(t, db, cluster.NewRole(t, "alice", db))
	settings := "SELECT current_setting('DateStyle') || '|' || current_setting('IntervalStyle') || '|' || current_setting('extra_float_digits')"
	mustExec(t, conn, "BEGIN; SET LOCAL DateStyle = 'SQL, DMY'; SET LOCAL IntervalStyle = sql_standard; SET LOCAL extra_float_digits = -15")
	before := queryString(t, conn, settings)
	for _, c := range []struct{ name, call, stored string }{
		{"Date", `public.any_value('02/01/2026'::date)`, `public.any_value('2026-01-02'::date)`},
		{"Interval", `public.any_value('-1 2:03:04'::interval)`, `public.any_value('-1 days -02:03:04'::interval)`},
		{"Float", `public.any_value(1.234567890123::float8)`, `public.any_value((1.234567890123)::double precision)`},
		{"Timestamp", `public.any_value('02/01/2026 10:00'::timestamp)`, `public.any_value('2026-01-02 10:00:00'::timestamp without time zone)`},
	} {
		mustExec(t, conn, "SELECT pgjobs.pgj_create_job("+quoteLiteral(c.name)+", "+quoteLiteral(c.call)+", null, null)")
		if got := queryString(t, conn, "SELECT function FROM pgjobs.pgj_jobs WHERE name = $1", c.name); got != c.stored {
			t.Errorf("%s stored as %s, want %s", c.call, got, c.stored)
		}
	}
	if after := queryString(t, conn, settings); after != before {
		t.Errorf("the caller's settings after setting the calls: %s, want %s", after, before)
	}
	mustExec(t, conn, "COMMIT")
}
