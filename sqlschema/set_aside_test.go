package sqlschema_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestSetAsideNamesNothing: since schema version 18 a former view or table is set aside, into
// pgjobs_gone, before it is dropped, and dropped only once every transaction open at the move has
// ended. Adding a column of a type takes no lock on it: alice committed 272,000 columns of her
// former view's row type between version 17's check and its DROP, which then walked them for a
// minute (the fourth review of version 17). Set aside, her former view's types name nothing she
// may use; a column of its type she added before the move, in a transaction still open, is seen by
// the drop's second check once that transaction ends, and the view is left, without a DROP. Two
// roles' tables of the same argument types, which have the same name, are both set aside.
func TestSetAsideNamesNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	aliceConn, bobConn := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	setCalls(t, aliceConn, "A", 1)
	orphans, err := sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil || len(orphans) != 1 {
		t.Fatalf("orphaned: %v, %v; want alice's former view", orphans, err)
	}
	former := orphans[0]
	aside := "pgjobs_gone." + strings.Split(former, ".")[1]

	// alice's column of the view's type, made before the move, committed after it
	early, err := aliceConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer early.Rollback(ctx)
	if _, err := early.Exec(ctx, "CREATE TEMP TABLE early (c "+former+")"); err != nil {
		t.Fatal(err)
	}
	// (her grant of USAGE on the type, with a grant option bob used, is taken back with his: the
	// attacker review of version 18, whose REVOKE failed on the dependent grant every round)
	schema, _, _ := strings.Cut(former, ".")
	mustExec(t, super, "GRANT USAGE ON SCHEMA "+schema+" TO "+pgx.Identifier{bob}.Sanitize()+
		"; SET ROLE "+pgx.Identifier{alice}.Sanitize()+"; GRANT USAGE ON TYPE "+former+" TO "+pgx.Identifier{bob}.Sanitize()+" WITH GRANT OPTION"+
		"; SET ROLE "+pgx.Identifier{bob}.Sanitize()+"; GRANT USAGE ON TYPE "+former+" TO PUBLIC"+
		"; RESET ROLE; REVOKE USAGE ON SCHEMA "+schema+" FROM "+pgx.Identifier{bob}.Sanitize())
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Aside: 1, Waiting: 1}) {
		t.Fatalf("drop while alice's transaction is open: %+v, %v; want her view set aside, waiting", swept, err)
	}
	if got := queryString(t, super, "SELECT t.typacl::text FROM pg_class c JOIN pg_type t ON t.oid = c.reltype WHERE c.oid = $1::regclass", aside); got != "{}" {
		t.Fatalf("privileges on the type of alice's view set aside: %s, want none", got)
	}
	lateConn := cluster.ConnectAs(t, db, alice)
	for _, sql := range []string{
		"CREATE TEMP TABLE late (c " + aside + ")",
		`CREATE TEMP TABLE late (c pgjobs_gone."_` + strings.Split(former, ".")[1] + `")`,
		"CREATE DOMAIN pg_temp.late AS " + aside,
		"SELECT * FROM " + aside,
		"ALTER VIEW " + aside + " SET SCHEMA public",
	} {
		wantError(t, lateConn, sql, "42501", "permission denied for schema pgjobs_gone")
	}
	// nor by OID (a parameter's type, which the extended protocol gives by OID: the code review
	// of version 18): the view and its types are the superuser's now, with no privilege for her
	reltype, err := strconv.ParseUint(queryString(t, super, "SELECT reltype::text FROM pg_class WHERE oid = $1::regclass", aside), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{"CREATE TEMP TABLE byoid AS SELECT $1 AS c", "CREATE TEMP TABLE byoid AS SELECT ARRAY[$1] AS c"} {
		_, err := lateConn.PgConn().ExecParams(ctx, sql, [][]byte{nil}, []uint32{uint32(reltype)}, nil, nil).Close()
		if pgErr := (*pgconn.PgError)(nil); !errors.As(err, &pgErr) || pgErr.Code != "42501" || !strings.Contains(pgErr.Message, "permission denied for type") {
			t.Fatalf("%s with the type's OID: %v, want permission denied for type", sql, err)
		}
	}
	if err := early.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Held: 1}) {
		t.Fatalf("drop once alice's transaction committed her column: %+v; want her view held", swept)
	}
	if got := queryString(t, super, "SELECT (to_regclass($1) IS NOT NULL)::text", aside); got != "true" {
		t.Fatalf("alice's view set aside: there %s", got)
	}

	// alice's and bob's tables of the arguments of f(int, text) have the same name
	mustExec(t, aliceConn, "DROP TABLE early; SELECT pgj_drop_job('A')")
	setCalls(t, bobConn, "B", 0)
	mustExec(t, bobConn, "SELECT pgj_drop_job('B')")
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Aside: 2, Dropped: 3}) {
		t.Fatalf("drop of the views: %+v; want alice's and bob's last set aside, and dropped with her first", swept)
	}
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Aside: 2, Dropped: 2}) {
		t.Fatalf("drop of the tables: %+v; want alice's and bob's set aside and dropped", swept)
	}
	if left, err := sqlschema.CallViewsOrphaned(ctx, super); err != nil || len(left) != 0 {
		t.Fatalf("left: %v, %v", left, err)
	}
}

// TestUpgradeToSetAside: the upgrade to schema version 18 makes pgjobs_gone, the superuser's, with
// no privilege for another role, even when the superuser's default privileges would grant some; a
// schema of that name a role made first fails the upgrade, naming its owner, and changes nothing.
func TestUpgradeToSetAside(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := cluster.NewDatabase(t)
	super := cluster.Connect(t, db)
	if err := sqlschema.InstallVersion(ctx, super, 17); err != nil {
		t.Fatal(err)
	}
	mallory := cluster.NewRole(t, "mallory", db)
	mustExec(t, super, "GRANT CREATE ON DATABASE "+pgx.Identifier{db}.Sanitize()+" TO "+pgx.Identifier{mallory}.Sanitize())
	malloryConn := cluster.ConnectAs(t, db, mallory)
	mustExec(t, malloryConn, "CREATE SCHEMA pgjobs_gone")
	if _, _, err := sqlschema.Upgrade(ctx, super); err == nil || !strings.Contains(err.Error(), "schema pgjobs_gone exists (owned by "+mallory+")") {
		t.Fatalf("upgrade with mallory's pgjobs_gone: %v", err)
	}
	if v, err := sqlschema.Installed(ctx, super); err != nil || v != 17 {
		t.Fatalf("installed after the failed upgrade: %d, %v", v, err)
	}
	mustExec(t, malloryConn, "DROP SCHEMA pgjobs_gone")
	mustExec(t, super, "ALTER DEFAULT PRIVILEGES GRANT USAGE, CREATE ON SCHEMAS TO PUBLIC")
	if _, to, err := sqlschema.Upgrade(ctx, super); err != nil || to != sqlschema.Latest() {
		t.Fatalf("upgrade: %d, %v", to, err)
	}
	if got := queryString(t, super, "SELECT pg_get_userbyid(nspowner)::text || ' ' || coalesce(nspacl::text, '') FROM pg_namespace WHERE nspname = 'pgjobs_gone'"); got != cluster.User()+" {"+cluster.User()+"=UC/"+cluster.User()+"}" {
		t.Fatalf("pgjobs_gone: %s", got)
	}
}

// TestUninstallDropsWhatIsSetAside: pgjobs disabledb drops what the agent set aside, with
// pgjobs_gone.
func TestUninstallDropsWhatIsSetAside(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	setCalls(t, cluster.ConnectAs(t, db, alice), "A", 1)
	orphans, err := sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil {
		t.Fatal(err)
	}
	open := openTransaction(t, db) // open at the move: no drop yet
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Aside: 1, Waiting: 1}) {
		t.Fatalf("drop: %+v, %v; want alice's former view set aside", swept, err)
	}
	if err := open.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := sqlschema.Uninstall(ctx, super); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, super, "SELECT count(*)::text FROM pg_namespace WHERE nspname ~ '^pgjobs'"); got != "0" {
		t.Fatalf("pgjobs schemas left after the uninstall: %s", got)
	}
}

// TestSetAsideTableForgetsItsRows: the queued rows of the former views of a table set aside are
// forgotten when it is set aside: the table goes whole, and its role, which may not use
// pgjobs_gone, could not delete them (the code review of version 18: each of its calls warned).
func TestSetAsideTableForgetsItsRows(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	aliceConn := cluster.ConnectAs(t, db, alice)
	setCalls(t, aliceConn, "A", 1)
	mustExec(t, aliceConn, "SELECT pgj_drop_job('A')")
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Aside: 2, Dropped: 2}) {
		t.Fatalf("drop of alice's views: %+v", swept)
	}
	openTransaction(t, db) // open at the move: no drop yet
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Aside: 1, Waiting: 1}) {
		t.Fatalf("drop of alice's table: %+v; want it set aside", swept)
	}
	if got := queryString(t, super, "SELECT count(*)::text FROM pgjobs.pgj_call_gone_"); got != "0" {
		t.Fatalf("queued rows of alice's views once her table is set aside: %s, want 0", got)
	}
	mustExec(t, aliceConn, "SELECT pgj_create_job('B', 'f(5, ''B'')', null, null)")
}

// TestSetAsideTableAnalyzesAsItsRole: a table set aside stays its role's, so that an ANALYZE of
// it (autovacuum's, or a superuser's) runs the role's code as the role: a range type of the role's
// in a column of its table of arguments has a subtype_diff that ANALYZE calls as the table's
// owner. The first fix of the code review of version 18 gave what it set aside to the superuser,
// and alice made herself superuser through autovacuum (the attacker review of version 18).
func TestSetAsideTableAnalyzesAsItsRole(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	aliceConn := cluster.ConnectAs(t, db, alice)
	mustExec(t, super, "CREATE SCHEMA alis AUTHORIZATION "+pgx.Identifier{alice}.Sanitize()+
		"; CREATE TABLE public.ran (who text); GRANT INSERT ON public.ran TO PUBLIC")
	mustExec(t, aliceConn, `CREATE FUNCTION alis.note() RETURNS float8 LANGUAGE plpgsql VOLATILE AS $$
			BEGIN INSERT INTO public.ran VALUES (current_user); RETURN 0; END $$;
		CREATE FUNCTION alis.diff(a bigint, b bigint) RETURNS float8 LANGUAGE plpgsql IMMUTABLE AS $$ BEGIN RETURN alis.note(); END $$;
		CREATE TYPE alis.r8 AS RANGE (subtype = bigint, subtype_diff = alis.diff);
		CREATE FUNCTION alis.r(x alis.r8) RETURNS void LANGUAGE sql AS 'SELECT 1';
		SELECT pgj_create_job('R', 'alis.r(''[1,5)'')', null, null)`)
	table := queryString(t, super, `SELECT t.oid::regclass::text FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname ~ '^pgjobs_call_' AND t.relkind = 'r'`)
	mustExec(t, aliceConn, "INSERT INTO "+table+" SELECT 'x' || i, int8range(i, i + 10)::text::alis.r8 FROM generate_series(1, 200) i; "+
		"SELECT pgj_update_job('R', null, 'f(1, ''R'')', null)")
	if swept := sweepAgain(t, super); swept.Dropped != 1 {
		t.Fatalf("drop of alice's former view: %+v", swept)
	}
	openTransaction(t, db) // open at the move: no drop yet
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Aside: 1, Waiting: 1}) {
		t.Fatalf("drop of alice's former table: %+v; want it set aside", swept)
	}
	aside := queryString(t, super, "SELECT asiderel::regclass::text FROM pgjobs.pgj_call_aside_")
	mustExec(t, super, "DELETE FROM public.ran; ANALYZE "+aside)
	if got := queryString(t, super, "SELECT coalesce(string_agg(DISTINCT who, ','), '') FROM public.ran"); got != alice {
		t.Fatalf("the ANALYZE of alice's table set aside ran her code as: %q, want %s", got, alice)
	}
}

// TestUntrackedSessionHoldsTheDrop: a session whose activity is not tracked (track_activities off,
// a superuser's setting) shows no transaction start: what is set aside waits for it to end, as for
// a transaction open for ever. An idle session may show the start of its last transaction; it
// holds nothing up.
func TestUntrackedSessionHoldsTheDrop(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	setCalls(t, cluster.ConnectAs(t, db, alice), "A", 1)
	untracked := cluster.Connect(t, db)
	mustExec(t, untracked, "SET track_activities = off")
	orphans, err := sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil {
		t.Fatal(err)
	}
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Aside: 1, Waiting: 1}) {
		t.Fatalf("drop while a session is untracked: %+v, %v; want alice's former view set aside, waiting", swept, err)
	}
	if err := untracked.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !eventuallyTrue(func() bool {
		return queryString(t, super, "SELECT count(*)::text FROM pg_stat_activity WHERE state = 'disabled' AND datname = current_database()") == "0"
	}) {
		t.Fatal("the untracked session did not end")
	}
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Dropped: 1}) {
		t.Fatalf("drop once the untracked session ended: %+v; want alice's former view dropped", swept)
	}
}

// eventuallyTrue polls cond every 20 ms for 10 s at most (a backend's end shows in pg_stat_activity
// a moment after its client closed), and reports whether it held.
func eventuallyTrue(cond func() bool) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// openTransaction begins a transaction of a superuser's on db that has begun for
// pg_stat_activity (a statement ran in it), rolled back when the test ends unless it ended sooner.
func openTransaction(t *testing.T, db string) pgx.Tx {
	t.Helper()
	tx, err := cluster.Connect(t, db).Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback(context.Background()) })
	if _, err := tx.Exec(t.Context(), "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	return tx
}
