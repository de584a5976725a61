package sqlschema_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
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
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Aside: 1, Waiting: 1}) {
		t.Fatalf("drop while alice's transaction is open: %+v, %v; want her view set aside, waiting", swept, err)
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
