package sqlschema_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
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
	setCalls(t, aliceConn, "Hold", former)
	setCalls(t, bobConn, "Free", 1)
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

	// alice holds her former views, as an attacker would, in a transaction she keeps open: half by
	// a lock on the view, half by one on its row type, which DROP VIEW locks too (the attacker
	// review of version 17 held these).
	holding, err := aliceConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holding.Rollback(ctx)
	if _, err := holding.Exec(ctx, "LOCK TABLE "+strings.Join(hers[:former/2], ", ")+" IN ACCESS SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	for _, v := range hers[former/2:] {
		if _, err := holding.Exec(ctx, "COMMENT ON TYPE "+v+" IS 'held'"); err != nil {
			t.Fatal(err)
		}
	}
	// Version 16 needed 6 s here (100 ms a view): the statement would be cancelled. Now every
	// view she holds is left at once, without a lock wait (one would count in the owner's budget
	// and leave the rest of hers deferred), and bob's former view is set aside, to be dropped once
	// the transactions open then (alice's) have ended.
	mustExec(t, super, "SET statement_timeout = '3s'")
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Aside: 1, Held: former, Waiting: 1}) {
		t.Fatalf("drop while alice holds her %d former views: %+v, %v; want bob's 1 set aside, her %d held", former, swept, err, former)
	}
	bobsAside := "pgjobs_gone." + strings.Split(bobsFormer(orphans, aliceSchema), ".")[1]
	if left, err := sqlschema.CallViewsOrphaned(ctx, super); err != nil || strings.Join(left, " ") != strings.Join(append(hers, bobsAside), " ") {
		t.Fatalf("left after the drop: %v, %v; want alice's %d and bob's set aside", left, err, former)
	}
	if err := holding.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	// Her job dropped, her views are set aside, bob's dropped; her table of arguments, which her
	// views set aside still read, stays
	mustExec(t, aliceConn, "SELECT pgj_drop_job('Hold')")
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Aside: former + 1, Dropped: former + 2}) {
		t.Fatalf("drop of alice's views once she let go: %+v; want %d set aside, and dropped with bob's", swept, former+1)
	}
	table := queryString(t, super, `SELECT string_agg(n.nspname || '.' || c.relname, ' ') FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, aliceSchema)
	if strings.Contains(table, " ") || !strings.Contains(table, ".args_") {
		t.Fatalf("alice's tables of arguments: %q, want one", table)
	}
	orphans, err = sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil || strings.Join(orphans, " ") != table {
		t.Fatalf("orphaned once her views went: %v, %v; want her table %s", orphans, err, table)
	}
	holding, err = aliceConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holding.Rollback(ctx)
	// she holds it by a lock on its primary key's index alone (COMMENT ON INDEX, as its owner),
	// which DROP TABLE takes too: the table is left, as held in pg_locks (or after a wait of 1 ms
	// at most: a role that committed columns of the table's row type during version 17's first
	// waits of 100 ms made the DROP walk them all, the fourth review of version 17)
	pkey := queryString(t, super, "SELECT i.indexrelid::regclass::text FROM pg_index i WHERE i.indrelid = $1::regclass", table)
	if _, err := holding.Exec(ctx, "COMMENT ON INDEX "+pkey+" IS 'held'"); err != nil {
		t.Fatal(err)
	}
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Held: 1}) {
		t.Fatalf("drop of alice's table while she holds it: %+v, %v; want it held", swept, err)
	}
	if got := queryString(t, super, "SELECT (to_regclass($1) IS NOT NULL)::text", table); got != "true" {
		t.Fatalf("alice's held table %s set aside", table)
	}
	if err := holding.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// bob holds alice's call schema, which any role may lock by name: her table is set aside, her
	// schema, empty, is left (skipped as held, or after a wait of 1 ms), and goes once he lets
	// go, with her table, whose drop waited for his transaction
	bobHolding, err := bobConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bobHolding.Rollback(ctx)
	if _, err := bobHolding.Exec(ctx, "SELECT pg_get_object_address('schema', ARRAY[$1], '{}')", aliceSchema); err != nil {
		t.Fatal(err)
	}
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Aside: 1, Waiting: 1}) {
		t.Fatalf("drop of alice's table while bob holds her schema: %+v, %v; want it set aside", swept, err)
	}
	if got := queryString(t, super, "SELECT (to_regclass($1) IS NULL)::text || ' ' || count(*)::text FROM pg_namespace WHERE nspname = $2", table, aliceSchema); got != "true 1" {
		t.Fatalf("alice's table set aside, her schema left while bob holds it: %s", got)
	}
	if err := bobHolding.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Dropped: 1}) {
		t.Fatalf("drop once bob let go: %+v; want alice's table dropped", swept)
	}
	if got := queryString(t, super, "SELECT count(*)::text FROM pg_namespace WHERE nspname = $1", aliceSchema); got != "0" {
		t.Fatalf("alice's call schema left: %s", got)
	}
}

// bobsFormer returns the one view of orphans that is not of schema.
func bobsFormer(orphans []string, schema string) string {
	for _, v := range orphans {
		if !strings.HasPrefix(v, schema+".") {
			return v
		}
	}
	return ""
}

// TestDropBudgets: within one statement the drop tries no more of an owner's former views once
// its tries took the owner's budget (beyond 10 ms each), nor any once the statement took its own:
// what a role makes it wait for (a lock taken after the drop read pg_locks, or let go just before
// the wait would time out, as the attacker review of version 17 did) holds up the drop of other
// roles' views that long at most. Budgets of 0 leave one try of each owner, and one in all. (The
// owners' turns are CallViewsDrop's, a statement each: TestOwnerBatches.)
func TestDropBudgets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	aliceConn, bobConn := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	setCalls(t, aliceConn, "A", 3)
	setCalls(t, bobConn, "B", 2)
	sweep := func(budget, ownerBudget string, tidy bool) (s sqlschema.CallViewsSwept) {
		t.Helper()
		orphans, err := sqlschema.CallViewsOrphaned(ctx, super)
		if err != nil {
			t.Fatal(err)
		}
		if tidy {
			orphans = nil
		}
		if err := super.QueryRow(ctx, "SELECT aside, dropped, held, deferred, waiting, failed FROM pgjobs.pgj_call_sweep_($1, $2::interval, $3::interval, $4)",
			orphans, budget, ownerBudget, tidy).Scan(&s.Aside, &s.Dropped, &s.Held, &s.Deferred, &s.Waiting, &s.Failed); err != nil {
			t.Fatal(err)
		}
		return s
	}
	// an owner's budget of 0: one view of each, set aside, then dropped
	if got := sweep("1 h", "0", false); got != (sqlschema.CallViewsSwept{Aside: 2, Deferred: 3}) {
		t.Fatalf("owner budget 0: %+v; want one of each owner's set aside, 3 deferred", got)
	}
	if got := sweep("1 h", "0", false); got != (sqlschema.CallViewsSwept{Aside: 2, Deferred: 1}) {
		t.Fatalf("owner budget 0, again: %+v; want one of each owner's set aside, 1 deferred", got)
	}
	if got := sweep("1 h", "0", true); got != (sqlschema.CallViewsSwept{Dropped: 2, Deferred: 2}) {
		t.Fatalf("owner budget 0, the drop: %+v; want one of each owner's dropped, 2 deferred", got)
	}
	// a statement's budget of 0: one view in all
	if got := sweep("0", "1 h", false); got != (sqlschema.CallViewsSwept{Aside: 1}) {
		t.Fatalf("statement budget 0: %+v; want the last set aside", got)
	}
	if got := sweep("0", "1 h", true); got != (sqlschema.CallViewsSwept{Dropped: 1, Deferred: 2}) {
		t.Fatalf("statement budget 0, the drop: %+v; want one dropped, 2 deferred", got)
	}
	if got := sweep("1 h", "1 h", true); got != (sqlschema.CallViewsSwept{Dropped: 2}) {
		t.Fatalf("budgets of an hour, the drop: %+v; want the last 2 dropped", got)
	}
	// the agent's own calls go through CallViewsDrop, within CallViewsDropBudget; the former
	// versions are no longer any role's to call
	wantError(t, bobConn, "SELECT pgjobs.pgj_call_views_drop_('{}')", "42501", "permission denied for function pgj_call_views_drop_")
	wantError(t, bobConn, "SELECT pgjobs.pgj_call_views_sweep_('{}', '1 s')", "42501", "permission denied for function pgj_call_views_sweep_")
}

// TestDropOutlivesHeldQueueRows: the rows of a former view the agent dropped stay queued until
// their role deletes them at its next call. alice dropped her table of arguments and held her
// queued row in an open transaction (pgj_call_gone_done_ deletes it): version 16's drop waited
// for the row at its end and failed, every time, dropping bob's former view with nothing (the
// attacker review of version 17). And her next call failed while the row named a table gone.
func TestDropOutlivesHeldQueueRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	aliceConn, bobConn := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	setCalls(t, aliceConn, "A", 1)
	orphans, err := sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil {
		t.Fatal(err)
	}
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept.Dropped != 1 {
		t.Fatalf("alice's former view: %+v, %v", swept, err)
	}
	var table uint32
	var id string
	if err := super.QueryRow(ctx, "SELECT gonetable, goneid FROM pgjobs.pgj_call_gone_").Scan(&table, &id); err != nil {
		t.Fatalf("alice's queued row: %v", err)
	}
	// (with her job's view, which reads it: the job stops until she sets its call again)
	mustExec(t, aliceConn, fmt.Sprintf("DROP TABLE %s CASCADE", queryString(t, super, "SELECT $1::oid::regclass::text", table)))
	holding, err := aliceConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holding.Rollback(ctx)
	if _, err := holding.Exec(ctx, "SELECT pgjobs.pgj_stamp_(), pgjobs.pgj_call_gone_done_('x', $1, $2)", table, []string{id}); err != nil {
		t.Fatal(err)
	}

	setCalls(t, bobConn, "B", 1)
	if orphans, err = sqlschema.CallViewsOrphaned(ctx, super); err != nil {
		t.Fatal(err)
	}
	// (set aside: alice's transaction was open then)
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Aside: 1, Waiting: 1}) {
		t.Fatalf("drop while alice holds her queued row: %+v, %v; want bob's former view set aside", swept, err)
	}
	if err := holding.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if swept := sweepAgain(t, super); swept.Dropped != 1 {
		t.Fatalf("drop once alice's transaction ended: %+v; want bob's former view dropped", swept)
	}
	if got := queryString(t, super, "SELECT count(*)::text FROM pgjobs.pgj_call_gone_ WHERE goneowner <> $1::regrole", alice); got != "1" {
		t.Fatalf("queued rows of bob's: %s, want 1", got)
	}
	// Her row names a table gone: her next call forgets it (version 16 failed: "null values
	// cannot be formatted as an SQL identifier").
	mustExec(t, aliceConn, "SELECT pgj_update_job('A', null, 'f(9, ''A'')', null)")
	if got := queryString(t, super, "SELECT count(*)::text FROM pgjobs.pgj_call_gone_ WHERE goneowner = $1::regrole", alice); got != "0" {
		t.Fatalf("alice's queued rows after her call: %s, want 0", got)
	}
}

// TestDropLeavesWhatUsesARowType: a former view, or a table of arguments no view reads, whose row
// type (or its array type) something of a role's uses is left, counted as held, without a DROP:
// DROP walks every such column or domain, locking each, before it refuses, and alice's 170
// temporary tables of 1,600 columns of her former view's row type made one drop statement run past
// the agent's 30 s statement_timeout, rolling back bob's drop with it (the third review of version
// 17).
func TestDropLeavesWhatUsesARowType(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	aliceConn, bobConn := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	mustExec(t, aliceConn, "SELECT pgj_create_job('A', 'f(0, ''a'')', null, null)")
	former := readBoundJob(t, super, "A").view
	mustExec(t, aliceConn, "SELECT pgj_update_job('A', null, 'f(1, ''a'')', null)")
	mustExec(t, aliceConn, "CREATE TEMP TABLE uses_view (c "+former+")")
	setCalls(t, bobConn, "B", 1)
	orphans, err := sqlschema.CallViewsOrphaned(ctx, super)
	if err != nil {
		t.Fatal(err)
	}
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Aside: 1, Dropped: 1, Held: 1}) {
		t.Fatalf("drop while alice's table has a column of her former view's type: %+v, %v; want bob's set aside and dropped, hers held", swept, err)
	}
	if got := queryString(t, super, "SELECT (to_regclass($1) IS NOT NULL)::text", former); got != "true" {
		t.Fatalf("alice's former view %s dropped", former)
	}
	// Her job dropped and her temporary table gone, her views go; her table of arguments, whose
	// array type her domain uses, stays.
	mustExec(t, aliceConn, "DROP TABLE uses_view")
	mustExec(t, aliceConn, "SELECT pgj_drop_job('A')")
	schema, _, _ := strings.Cut(former, ".")
	table := queryString(t, super, `SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind = 'r'`, schema)
	mustExec(t, aliceConn, "CREATE DOMAIN pg_temp.uses_table AS "+strings.Replace(table, ".", `."_`, 1)+`"`)
	if orphans, err = sqlschema.CallViewsOrphaned(ctx, super); err != nil {
		t.Fatal(err)
	}
	if swept, err := sqlschema.CallViewsDrop(ctx, super, orphans); err != nil || swept != (sqlschema.CallViewsSwept{Aside: 2, Dropped: 2}) {
		t.Fatalf("drop of alice's 2 views: %+v, %v; want them set aside and dropped", swept, err)
	}
	// (the table, read by no view now, at the next round)
	if swept := sweepAgain(t, super); swept != (sqlschema.CallViewsSwept{Held: 1}) {
		t.Fatalf("drop while alice's domain is of her table's array type: %+v; want her table held", swept)
	}
	if got := queryString(t, super, "SELECT (to_regclass($1) IS NOT NULL)::text", table); got != "true" {
		t.Fatalf("alice's table %s dropped", table)
	}
}

// TestHeldMapsWhatDropLocks: a lock another session holds on anything DROP locks with a view or a
// table of arguments (its row type and array type, its rule, its primary key's constraint and
// index) counts as holding the view or table, so that the drop leaves it without a wait: during a
// wait of version 17's first fixes a role committed columns of the row type, which the DROP then
// walked for a minute (the third and fourth reviews of version 17). A lock taken after pg_locks
// was read is waited for 1 ms at most.
func TestHeldMapsWhatDropLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	aliceConn := cluster.ConnectAs(t, db, alice)
	mustExec(t, aliceConn, "SELECT pgj_create_job('A', 'f(0, ''a'')', null, null)")
	view := readBoundJob(t, super, "A").view
	schema, name, _ := strings.Cut(view, ".")
	table := queryString(t, super, `SELECT t.oid::regclass::text FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname = $1 AND t.relkind = 'r'`, schema)
	pkey := queryString(t, super, "SELECT conname::text FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'", table)
	for _, c := range []struct{ what, lock, held string }{
		{"the view's row type", "COMMENT ON TYPE " + view + " IS 'held'", view},
		{"the view's array type", `COMMENT ON TYPE ` + schema + `."_` + name + `" IS 'held'`, view},
		{"the view's rule", "SELECT pg_get_object_address('rule', ARRAY['" + schema + "', '" + name + "', '_RETURN'], '{}')", view},
		{"the table's primary key", "COMMENT ON CONSTRAINT " + pkey + " ON " + table + " IS 'held'", table},
		{"the table's index", "COMMENT ON INDEX " + schema + "." + pkey + " IS 'held'", table},
	} {
		t.Run(c.what, func(t *testing.T) {
			holding, err := aliceConn.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer holding.Rollback(ctx)
			if _, err := holding.Exec(ctx, c.lock); err != nil {
				t.Fatal(err)
			}
			if got := queryString(t, super, "SELECT ($1::regclass::oid = ANY (pgjobs.pgj_call_held_()))::text", c.held); got != "true" {
				t.Errorf("alice holds %s: %s not held", c.what, c.held)
			}
		})
	}
	if got := queryString(t, super, "SELECT array_to_string(proconfig, ' ') FROM pg_proc WHERE oid = 'pgjobs.pgj_call_sweep_'::regproc"); !strings.Contains(got, "lock_timeout=1ms") {
		t.Fatalf("the sweep's settings: %s, want lock_timeout=1ms", got)
	}
}

// sweepAgain is the agent's next round of drops: CallViewsDrop of what CallViewsOrphaned lists now.
func sweepAgain(t *testing.T, q sqlschema.DB) sqlschema.CallViewsSwept {
	t.Helper()
	orphans, err := sqlschema.CallViewsOrphaned(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	swept, err := sqlschema.CallViewsDrop(t.Context(), q, orphans)
	if err != nil {
		t.Fatalf("drop of %v: %v", orphans, err)
	}
	return swept
}

// setCalls makes job (its call f(0, 'job')) on conn and sets its call again former times, leaving
// former views of its owner's.
func setCalls(t *testing.T, conn *pgx.Conn, job string, former int) {
	t.Helper()
	mustExec(t, conn, fmt.Sprintf("SELECT pgj_create_job('%s', 'f(0, ''%s'')', null, null)", job, job))
	for i := 1; i <= former; i++ {
		mustExec(t, conn, fmt.Sprintf("SELECT pgj_update_job('%s', null, 'f(%d, ''%s'')', null)", job, i, job))
	}
}
