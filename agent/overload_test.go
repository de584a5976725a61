package agent_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
)

// TestOverloadOfTheJobsFunction: calls stored before schema version 15 (text, no view) are looked
// up by name at each run. Every role may create in public (as before PostgreSQL 15), and alice
// adds functions of the names bob's and a superuser's jobs call: an overload that fits the
// call better than its polymorphic function (public.bob_poly(integer) beside bob_poly(anyelement),
// which PostgreSQL would choose), one that makes the call ambiguous, and one in place of a function
// bob dropped, and domains of the names, which PostgreSQL reads as casts. None of hers runs: each
// run fails, naming her object and role. A call that is not exact (a polymorphic function, one made
// again since the call was set) is refused in public, where every role may create and so race the
// guard, and runs in bob's own schema. What the owner trusted still runs: bob's own overloads, a
// superuser's overload; and alice's table and domain of the names of calls that PostgreSQL never
// reads as casts (no argument, two) refuse nothing.
func TestOverloadOfTheJobsFunction(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	ctx := context.Background()
	alice := cluster.NewRole(t, "alice", db.name)
	bob := cluster.NewRole(t, "bob", db.name)
	carol := cluster.NewRole(t, "carol", db.name)
	db.exec(t, "GRANT CREATE ON SCHEMA public TO PUBLIC")
	function := func(signature, wrote string) string {
		return "CREATE FUNCTION public." + signature + " RETURNS void LANGUAGE sql AS $$ INSERT INTO public.calls (job) VALUES ('" + wrote + " as ' || current_user) $$;"
	}
	as := func(role, sql string) {
		t.Helper()
		if _, err := cluster.ConnectAs(t, db.name, role).Exec(ctx, sql); err != nil {
			t.Fatalf("as %s: %s: %v", role, sql, err)
		}
	}
	as(carol, function("carol_f(x anyelement)", "carol_f"))
	db.exec(t, "CREATE SCHEMA bob_schema AUTHORIZATION "+pgx.Identifier{bob}.Sanitize())
	as(bob, "CREATE FUNCTION bob_schema.poly(x anyelement) RETURNS void LANGUAGE sql AS $$ INSERT INTO public.calls (job) VALUES ('bob_schema.poly as ' || current_user) $$")
	db.exec(t, function("su_poly(x anyelement)", "su_poly")+`
		SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Su', 'public.su_poly(1)', null, 'At01')`)
	as(bob, function("bob_poly(x anyelement)", "bob_poly")+function("bob_int(x int)", "bob_int")+
		function("bob_own(x int)", "bob_own")+function("bob_own(x text)", "bob_own text")+
		function("bob_again(x int)", "bob_again")+function("bob_gone(x int)", "bob_gone")+
		function("bob_dom(x anyelement)", "bob_dom")+function("bob_renamed(x int)", "bob_renamed")+
		function("bob_table()", "bob_table")+function("bob_two(x int, y int)", "bob_two")+
		function("bob_lonely(x anyelement)", "bob_lonely")+`
		SELECT pgj_create_schedule('Bob01', 'D 01');
		SELECT pgj_create_job(j, c, null, 'Bob01') FROM (VALUES ('Poly', 'bob_poly(1)'), ('Int', 'bob_int(1)'),
			('Own', 'bob_own(1)'), ('Again', 'bob_again(1)'), ('Gone', 'bob_gone(1)'), ('Carol', 'carol_f(1)'),
			('Dom', 'bob_dom(1)'), ('Renamed', 'bob_renamed(1)'), ('Table', 'bob_table()'), ('Two', 'bob_two(1, 2)'),
			('Lonely', 'bob_lonely(1)'), ('Own schema', 'bob_schema.poly(1)')) AS v(j, c)`)
	db.unbind(t)

	as(alice, function("bob_poly(x integer)", "hijacked")+function("bob_int(x int, y int DEFAULT 0)", "hijacked")+
		function("su_poly(x integer)", "hijacked")+`
		CREATE FUNCTION public.alice_check(v anyelement) RETURNS boolean LANGUAGE sql AS $$ INSERT INTO public.calls (job) VALUES ('hijacked as ' || current_user) RETURNING true $$;
		CREATE DOMAIN public.bob_dom AS integer CHECK (public.alice_check(VALUE));`)
	as(bob, "ALTER FUNCTION public.bob_renamed(int) RENAME TO bob_renamed_again")
	as(alice, "CREATE DOMAIN public.bob_renamed AS integer CHECK (public.alice_check(VALUE))")
	// Not read as casts: a table's row type, and a call of two arguments (the second attack).
	as(alice, "CREATE TABLE public.bob_table (x int); CREATE DOMAIN public.bob_two AS integer CHECK (public.alice_check(VALUE))")
	as(bob, "DROP FUNCTION public.bob_again(int); DROP FUNCTION public.bob_gone(int);"+function("bob_again(x int)", "bob_again made again"))
	as(alice, function("bob_gone(x int)", "hijacked"))
	as(carol, function("carol_f(x integer)", "carol_f(integer)"))
	db.exec(t, function("bob_own(x bigint)", "bob_own bigint of the superuser"))

	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	got := fireAt(t, db, clock, t0.Add(time.Minute), 13)
	slices.Sort(got)
	want := []string{"Again error 10:01 42725", "Carol error 10:01 42725", "Dom error 10:01 42725", "Gone error 10:01 42725", "Int error 10:01 42725",
		"Lonely error 10:01 42725", "Own ok 10:01", "Own schema ok 10:01", "Poly error 10:01 42725", "Renamed error 10:01 42725", "Su error 10:01 42725",
		"Table ok 10:01", "Two ok 10:01"}
	if !slices.Equal(got, want) {
		t.Fatalf("runs = %q, want %q", got, want)
	}
	if c := calls(t, db); strings.Contains(c, "hijacked") || !strings.Contains(c, "bob_schema.poly as "+bob) ||
		!strings.Contains(c, "bob_own as "+bob) || !strings.Contains(c, "bob_table as "+bob) || !strings.Contains(c, "bob_two as "+bob) {
		t.Fatalf("calls = %q: want none of alice's functions, and bob's, carol's and the superuser's own", c)
	}
	rows, _ := db.conn.Query(ctx, "SELECT runjobname || ': ' || runmessage FROM pgjobs.pgj_run_ WHERE runstatus = 'error' ORDER BY runjobname")
	messages, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{
		"Again: the function the job's call was set to (OID ", // made again: another OID, and every role may create in public
		"Carol: the job's function public.carol_f(anyelement) takes an argument of a pseudo-type (anyelement)",
		"Dom: type public.bob_dom is owned by role " + alice,
		"Gone: the function the job's call was set to (OID ", // dropped: no longer public.bob_gone
		"Int: public.bob_int(integer,integer) is owned by role " + alice,
		"Lonely: the job's function public.bob_lonely(anyelement) takes an argument of a pseudo-type (anyelement), which a function of concrete types fits better, and every role (PUBLIC) may create in schema public",
		"Poly: public.bob_poly(integer) is owned by role " + alice,
		"Renamed: the function the job's call was set to (OID ",
		"Su: public.su_poly(integer) is owned by role " + alice,
	} {
		if i >= len(messages) || !strings.HasPrefix(messages[i], want) {
			t.Fatalf("the refusals' messages:\n%s\nwant one starting %q", strings.Join(messages, "\n"), want)
		}
	}
	for i, c := range map[int]struct{ name, what string }{3: {"bob_gone", "public.bob_gone(integer)"}, 7: {"bob_renamed", "type public.bob_renamed"}} {
		if want := "is no longer public." + c.name + ", and " + c.what + " of that name is owned by role " + alice; !strings.Contains(messages[i], want) {
			t.Errorf("the refusal %q does not say %q", messages[i], want)
		}
	}

}

// TestOverloadDoesNotReachBoundCalls: the calls of TestOverloadOfTheJobsFunction, bound (schema
// version 15): alice's better fits, ambiguous overloads and domains of the names in public, and a
// renamed function's name taken by her domain, change nothing; each job runs the function its call
// was set to, polymorphic ones in public included.
func TestOverloadDoesNotReachBoundCalls(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	ctx := context.Background()
	alice := cluster.NewRole(t, "alice", db.name)
	bob := cluster.NewRole(t, "bob", db.name)
	db.exec(t, "GRANT CREATE ON SCHEMA public TO PUBLIC")
	function := func(signature, wrote string) string {
		return "CREATE FUNCTION public." + signature + " RETURNS void LANGUAGE sql AS $$ INSERT INTO public.calls (job) VALUES ('" + wrote + " as ' || current_user) $$;"
	}
	as := func(role, sql string) {
		t.Helper()
		if _, err := cluster.ConnectAs(t, db.name, role).Exec(ctx, sql); err != nil {
			t.Fatalf("as %s: %s: %v", role, sql, err)
		}
	}
	db.exec(t, function("su_poly(x anyelement)", "su_poly")+`
		SELECT pgj_create_schedule('At01', 'D 01'), pgj_create_job('Su', 'public.su_poly(1)', null, 'At01')`)
	as(bob, function("bob_poly(x anyelement)", "bob_poly")+function("bob_int(x int)", "bob_int")+
		function("bob_dom(x anyelement)", "bob_dom")+function("bob_renamed(x int)", "bob_renamed")+`
		SELECT pgj_create_schedule('Bob01', 'D 01');
		SELECT pgj_create_job(j, c, null, 'Bob01') FROM (VALUES ('Poly', 'bob_poly(1)'), ('Int', 'bob_int(1)'),
			('Dom', 'bob_dom(1)'), ('Renamed', 'bob_renamed(1)')) AS v(j, c)`)
	as(alice, function("bob_poly(x integer)", "hijacked")+function("bob_int(x int, y int DEFAULT 0)", "hijacked")+
		function("su_poly(x integer)", "hijacked")+`
		CREATE FUNCTION public.alice_check(v anyelement) RETURNS boolean LANGUAGE sql AS $$ INSERT INTO public.calls (job) VALUES ('hijacked as ' || current_user) RETURNING true $$;
		CREATE DOMAIN public.bob_dom AS integer CHECK (public.alice_check(VALUE));`)
	as(bob, "ALTER FUNCTION public.bob_renamed(int) RENAME TO bob_renamed_again")
	as(alice, "CREATE DOMAIN public.bob_renamed AS integer CHECK (public.alice_check(VALUE))")

	clock := fakeclock.New(t0)
	startAgent(t, clock, db)
	got := fireAt(t, db, clock, t0.Add(time.Minute), 5)
	slices.Sort(got)
	if want := []string{"Dom ok 10:01", "Int ok 10:01", "Poly ok 10:01", "Renamed ok 10:01", "Su ok 10:01"}; !slices.Equal(got, want) {
		t.Fatalf("runs = %q, want %q", got, want)
	}
	if c := calls(t, db); strings.Contains(c, "hijacked") || !strings.Contains(c, "bob_poly as "+bob) || !strings.Contains(c, "bob_renamed as "+bob) ||
		!strings.Contains(c, "su_poly as ") {
		t.Fatalf("calls = %q: want bob's and the superuser's own functions, none of alice's", c)
	}
}
