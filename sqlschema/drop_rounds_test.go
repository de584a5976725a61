package sqlschema_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestDropSkipsWhatARoleHolds: since schema version 17 the agent's drop of former calls leaves at
// once the views and tables another session holds. Version 16 waited 100 ms for each: alice, an
// ordinary role, locked her 60 former views in an open transaction, and each drop round of the
// agent waited 6 s for them (26 s for 260 in the attacker review), holding up the drop of bob's.
func TestDropSkipsWhatARoleHolds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	aliceConn, bobConn := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	const former = 60
	mustExec(t, aliceConn, "SELECT pgj_create_job('Hold', 'f(0, ''secret'')', null, null)")
	for i := 1; i <= former; i++ {
		mustExec(t, aliceConn, fmt.Sprintf("SELECT pgj_update_job('Hold', null, 'f(%d, ''secret'')', null)", i))
	}
	mustExec(t, bobConn, "SELECT pgj_create_job('Free', 'f(0, ''x'')', null, null)")
	mustExec(t, bobConn, "SELECT pgj_update_job('Free', null, 'f(1, ''x'')', null)")
	orphans, err := sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil || len(orphans) != former+1 {
		t.Fatalf("orphaned: %d, %v; want %d", len(orphans), err, former+1)
	}
	aliceSchema := "pgjobs_call_" + queryString(t, super, "SELECT oid::text FROM pg_roles WHERE rolname = $1", alice)
	var hers []string
	for _, v := range orphans {
		if strings.HasPrefix(v, aliceSchema+".") {
			hers = append(hers, v)
		}
	}
	if len(hers) != former {
		t.Fatalf("alice's former views: %d of %v", len(hers), orphans)
	}

	// alice holds her former views, as an attacker would, in a transaction she keeps open.
	holding, err := aliceConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holding.Rollback(ctx)
	if _, err := holding.Exec(ctx, "LOCK TABLE "+strings.Join(hers, ", ")+" IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	// Version 16 needed 6 s here (100 ms a view): the statement would be cancelled; now it takes
	// milliseconds, and bob's former view goes.
	mustExec(t, super, "SET statement_timeout = '3s'")
	if n, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || n != 1 {
		t.Fatalf("drop while alice holds her %d former views: dropped %d, %v; want bob's 1", former, n, err)
	}
	if left, err := sqlschema.CallViewsOrphaned(ctx, super); err != nil || strings.Join(left, " ") != strings.Join(hers, " ") {
		t.Fatalf("left after the drop: %v, %v; want alice's %d", left, err, former)
	}
	if err := holding.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// Her job dropped, her views go but her table of arguments, which she holds now.
	mustExec(t, aliceConn, "SELECT pgj_drop_job('Hold')")
	orphans, err = sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil || len(orphans) != former+1 {
		t.Fatalf("orphaned after alice's drop: %d, %v; want %d", len(orphans), err, former+1)
	}
	table := queryString(t, super, `SELECT string_agg(n.nspname || '.' || c.relname, ' ') FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, aliceSchema)
	if strings.Contains(table, " ") || !strings.Contains(table, ".args_") {
		t.Fatalf("alice's tables of arguments: %q, want one", table)
	}
	holding, err = aliceConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holding.Rollback(ctx)
	if _, err := holding.Exec(ctx, "LOCK TABLE "+table+" IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	if n, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || n != former+1 {
		t.Fatalf("drop of alice's views while she holds her table: dropped %d, %v; want %d", n, err, former+1)
	}
	if got := queryString(t, super, "SELECT (to_regclass($1) IS NOT NULL)::text", table); got != "true" {
		t.Fatalf("alice's held table %s dropped", table)
	}
	if err := holding.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	orphans, err = sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil || strings.Join(orphans, " ") != table {
		t.Fatalf("orphaned once alice let go: %v, %v; want her table %s", orphans, err, table)
	}
	if _, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, super, "SELECT count(*)::text FROM pg_namespace WHERE nspname = $1", aliceSchema); got != "0" {
		t.Fatalf("alice's call schema left: %s", got)
	}
}
