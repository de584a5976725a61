package sqlschema_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// Found by the attacker review of the daily-use pieces (docs/security.md): an ordinary role's own
// pgj_* transaction must not be ended by the agent's sweep of intruders, and no role may keep the
// agent from pruning the run history by holding a caller stamp locked.

// TestIntruderSweepSparesCallersOfTheAPI: alice's transaction that called pgj_set_job_timeout
// holds ROW SHARE on pgj_job_ (FOR NO KEY UPDATE); the sweep leaves it alone, and it commits.
func TestIntruderSweepSparesCallersOfTheAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	conn := cluster.ConnectAs(t, db, alice)
	mustExec(t, conn, "SELECT pgj_create_schedule('Daily', 'D 6:30'), pgj_create_job('Report', 'off_line()', null, 'Daily')")
	mustExec(t, conn, "BEGIN; SELECT pgj_set_job_timeout('Report', '1 minute'); SELECT pgj_pause_job('Report')")
	var locks int
	if err := super.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE pid = $1 AND locktype = 'relation'
		AND relation IN (SELECT oid FROM pg_class WHERE relnamespace = 'pgjobs'::regnamespace)`, conn.PgConn().PID()).Scan(&locks); err != nil || locks == 0 {
		t.Fatalf("alice's transaction holds %d locks on pgjobs' tables (%v): the test proves nothing", locks, err)
	}
	ended, err := sqlschema.LeaderEndIntruders(ctx, super)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ended {
		if e.PID == int(conn.PgConn().PID()) {
			t.Fatalf("the sweep ended alice's transaction that called the API: %+v", e)
		}
	}
	mustExec(t, conn, "COMMIT")
}

// TestPruneSkipsLockedStamps: alice keeps an old stamp of hers locked in an open transaction (her
// next stamp's trigger deletes it); the prune still deletes old runs, and leaves her stamp for later.
func TestPruneSkipsLockedStamps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	conn := cluster.ConnectAs(t, db, alice)
	mustExec(t, conn, "INSERT INTO pgjobs.pgj_caller_ DEFAULT VALUES")
	mustExec(t, super, "SET session_replication_role = replica; UPDATE pgjobs.pgj_caller_ SET stamped = now() - interval '2 hours'; RESET session_replication_role")
	mustExec(t, super, `INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runownerid, runagent, runstarted, runfinished, runstatus)
		VALUES (NULL, 'Old', 'postgres', 10, 'test', now() - interval '400 days', now() - interval '400 days', 'ok')`)
	mustExec(t, conn, "BEGIN; INSERT INTO pgjobs.pgj_caller_ DEFAULT VALUES") // locks the old stamp
	mustExec(t, super, "SET lock_timeout = '1s'")
	n, err := sqlschema.RunPrune(ctx, super)
	if err != nil {
		t.Fatalf("prune while alice holds a stamp locked: %v", err)
	}
	if n != 1 {
		t.Errorf("prune deleted %d runs, want the one older than the retention", n)
	}
	mustExec(t, conn, "ROLLBACK")
}

// TestPruneDeletesInBatches: more old runs than one batch are all deleted, in statements of at most
// PruneBatch each; a run within the retention stays.
func TestPruneDeletesInBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, super := apiDatabase(t)
	old := 2*sqlschema.PruneBatch + 10
	mustExec(t, super, fmt.Sprintf(`INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runownerid, runagent, runstarted, runfinished, runstatus)
		SELECT NULL, 'Old' || i, 'postgres', 10, 'test', now() - interval '400 days', now() - interval '400 days' + i * interval '1 second', 'ok'
		FROM generate_series(1, %d) i`, old))
	mustExec(t, super, `INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runownerid, runagent, runstarted, runfinished, runstatus)
		VALUES (NULL, 'Recent', 'postgres', 10, 'test', now(), now(), 'ok')`)
	n, err := sqlschema.RunPrune(ctx, super)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(old) {
		t.Errorf("prune deleted %d runs, want the %d older than the retention", n, old)
	}
	var left string
	if err := super.QueryRow(ctx, "SELECT string_agg(runjobname, ',') FROM pgjobs.pgj_run_").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != "Recent" {
		t.Errorf("runs left after the prune: %s, want Recent", left)
	}
}
