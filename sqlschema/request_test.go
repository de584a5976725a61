package sqlschema_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestRunJobRequests: pgj_run_job as ordinary LOGIN roles. The owner's request is filed once per
// waiting job and wakes the agent; another role cannot ask for it, see it, or reach the request
// table; the internal function refuses a caller who did not stamp; the agent takes each request
// once, and only while its epoch holds the lease.
func TestRunJobRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	bob := cluster.NewRole(t, "bob", db)
	aliceConn := cluster.ConnectAs(t, db, alice)
	bobConn := cluster.ConnectAs(t, db, bob)
	mustExec(t, aliceConn, "SELECT pgj_create_schedule('Daily', 'D 6:30'), pgj_create_job('Report', 'off_line()', null, 'Daily')")
	mustExec(t, aliceConn, "LISTEN pgjobs_run")

	first, err := sqlschema.RequestRun(ctx, aliceConn, "Report")
	if err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := aliceConn.WaitForNotification(wait); err != nil {
		t.Fatalf("no pgjobs_run notification for the request: %v", err)
	}
	if again, err := sqlschema.RequestRun(ctx, aliceConn, "Report"); err != nil || again != first {
		t.Fatalf("a second request while one waits: %d, %v; want %d", again, err, first)
	}
	if got := queryString(t, aliceConn, "SELECT string_agg(job || ' ' || requested_by, ',') FROM pgj_run_requests"); got != "Report "+alice {
		t.Fatalf("alice's requests: %s", got)
	}

	// bob: alice's job does not exist for him; he sees no request and cannot touch the table.
	wantError(t, bobConn, "SELECT pgj_run_job('Report')", "42704", `pgj_run_job: argument 1: job "Report" does not exist`)
	if got := queryString(t, bobConn, "SELECT count(*)::text FROM pgj_run_requests"); got != "0" {
		t.Fatalf("bob sees %s requests", got)
	}
	for _, sql := range []string{
		"SELECT * FROM pgjobs.pgj_request_",
		"UPDATE pgjobs.pgj_request_ SET reqtaken = now()",
		"INSERT INTO pgjobs.pgj_request_ (reqjobid, reqjobname, reqownerid, reqby) VALUES (1, 'Report', 10, 10)",
		"DELETE FROM pgjobs.pgj_request_",
		"BEGIN; LOCK pgjobs.pgj_request_; COMMIT",
	} {
		mustExec(t, bobConn, "ROLLBACK")
		wantError(t, bobConn, sql, "42501", "permission denied")
	}
	mustExec(t, bobConn, "ROLLBACK")
	// The definer function, called without the stamp of the public one, acts for nobody.
	wantError(t, bobConn, "SELECT pgjobs.pgj_job_request_('pgj_run_job', 'Report')", "42501", "call the public pgj_* function")

	// The agent: a stale epoch takes nothing; the current one takes the request once.
	var epoch int64
	if err := super.QueryRow(ctx, "UPDATE pgjobs.pgj_leader_ SET epoch = epoch + 1 RETURNING epoch").Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	var jobID int
	var version string
	if err := super.QueryRow(ctx, "SELECT jobid, xmin::text FROM pgjobs.pgj_job_ WHERE jobname = 'Report'").Scan(&jobID, &version); err != nil {
		t.Fatal(err)
	}
	// A second job of alice's, not changed, with a request: the take pairs each job with its own
	// version.
	mustExec(t, aliceConn, "SELECT pgj_create_job('Steady', 'off_line()', null, null)")
	steady, err := sqlschema.RequestRun(ctx, aliceConn, "Steady")
	if err != nil {
		t.Fatal(err)
	}
	var steadyID int
	var steadyVersion string
	if err := super.QueryRow(ctx, "SELECT jobid, xmin::text FROM pgjobs.pgj_job_ WHERE jobname = 'Steady'").Scan(&steadyID, &steadyVersion); err != nil {
		t.Fatal(err)
	}
	planned := map[int]string{jobID: version, steadyID: steadyVersion}
	if taken, err := sqlschema.RequestTake(ctx, super, epoch, nil, 10); err != nil || len(taken) != 0 {
		t.Fatalf("a job the agent does not plan yet: taken %v, %v; want it left waiting", taken, err)
	}
	if taken, err := sqlschema.RequestTake(ctx, super, epoch-1, planned, 10); err != nil || len(taken) != 0 {
		t.Fatalf("a stale epoch took %v, %v", taken, err)
	}
	// A job changed since the agent loaded it: its request waits for the take after the reload.
	mustExec(t, aliceConn, "SELECT pgj_update_job('Report', null, 'off_line()', null)")
	if taken, err := sqlschema.RequestTake(ctx, super, epoch, planned, 10); err != nil || len(taken) != 1 || taken[0].ID != steady {
		t.Fatalf("a job changed since it was loaded, and one not: taken %v, %v; want only request %d of Steady", taken, err, steady)
	}
	if err := super.QueryRow(ctx, "SELECT xmin::text FROM pgjobs.pgj_job_ WHERE jobid = $1", jobID).Scan(&version); err != nil {
		t.Fatal(err)
	}
	planned[jobID] = version
	taken, err := sqlschema.RequestTake(ctx, super, epoch, planned, 10)
	if err != nil || len(taken) != 1 || taken[0].ID != first || taken[0].JobName != "Report" {
		t.Fatalf("taken %+v, %v; want request %d of Report", taken, err, first)
	}
	if again, err := sqlschema.RequestTake(ctx, super, epoch, planned, 10); err != nil || len(again) != 0 {
		t.Fatalf("taken twice: %v, %v", again, err)
	}
	// Answered, a new request is filed for the job.
	next, err := sqlschema.RequestRun(ctx, aliceConn, "Report")
	if err != nil || next == first {
		t.Fatalf("a request after the first was taken: %d, %v", next, err)
	}
	// Taken by a lead that then ended before a run was recorded: the next lead answers it.
	if taken, err := sqlschema.RequestTake(ctx, super, epoch, planned, 10); err != nil || len(taken) != 1 {
		t.Fatalf("take the second request: %v, %v", taken, err)
	}
	mustExec(t, super, "UPDATE pgjobs.pgj_leader_ SET epoch = epoch + 1")
	if n, err := sqlschema.RequestOrphans(ctx, super, epoch, nil); err != nil || n != 0 {
		t.Fatalf("a stale epoch answered %d orphans, %v", n, err)
	}
	if n, err := sqlschema.RequestOrphans(ctx, super, epoch+1, []int64{first, next, steady}); err != nil || n != 0 {
		t.Fatalf("requests whose runs the agent has in flight answered as orphans: %d, %v", n, err)
	}
	if n, err := sqlschema.RequestOrphans(ctx, super, epoch+1, nil); err != nil || n != 3 { // the first and Steady's, taken and never answered, too
		t.Fatalf("orphans answered: %d, %v; want 3", n, err)
	}
	if r, err := sqlschema.RequestRead(ctx, aliceConn, next); err != nil || r.Refused == nil || !strings.Contains(*r.Refused, "ask again") {
		t.Fatalf("the orphan as alice reads it: %+v, %v", r, err)
	}
	if err := sqlschema.RequestRefuse(ctx, super, []int64{first}, []string{"not run: test"}); err != nil {
		t.Fatal(err)
	}
	r, err := sqlschema.RequestRead(ctx, aliceConn, first)
	if err != nil || r.Taken == nil || r.Refused == nil || *r.Refused != "not run: test" || !r.Ended() {
		t.Fatalf("request as alice reads it: %+v, %v", r, err)
	}
	if _, err := sqlschema.RequestRead(ctx, bobConn, first); err == nil {
		t.Fatal("bob read alice's request")
	}
	// A request whose job is paused after it was filed is answered by the take, not run.
	mustExec(t, aliceConn, "SELECT pgj_create_job('Later', 'off_line()', null, 'Daily')")
	later, err := sqlschema.RequestRun(ctx, aliceConn, "Later")
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, aliceConn, "SELECT pgj_pause_job('Later')")
	wantError(t, aliceConn, "SELECT pgj_run_job('Later')", "55000", `pgj_run_job: argument 1: job "Later" is paused`)
	var laterID int
	if err := super.QueryRow(ctx, "SELECT jobid FROM pgjobs.pgj_job_ WHERE jobname = 'Later'").Scan(&laterID); err != nil {
		t.Fatal(err)
	}
	if taken, err := sqlschema.RequestTake(ctx, super, epoch+1, map[int]string{jobID: version, laterID: ""}, 10); err != nil || len(taken) != 0 {
		t.Fatalf("the take of a paused job's request: %v, %v; want none", taken, err)
	}
	if r, err := sqlschema.RequestRead(ctx, aliceConn, later); err != nil || r.Refused == nil || !strings.Contains(*r.Refused, "paused or dropped") {
		t.Fatalf("the paused job's request: %+v, %v", r, err)
	}
	// At most 100 requests a minute per role.
	mustExec(t, super, fmt.Sprintf(`INSERT INTO pgjobs.pgj_request_ (reqjobid, reqjobname, reqownerid, reqby, reqtaken)
		SELECT %d, 'Report', r.oid, r.oid, now() FROM pg_roles r, generate_series(1, 100) WHERE r.rolname = '%s'`, jobID, alice))
	wantError(t, aliceConn, "SELECT pgj_run_job('Report')", "54000", "asked to run jobs 100 times in the last minute")
	if led, err := sqlschema.LeaderActive(ctx, bobConn); err != nil || led != nil {
		t.Fatalf("LeaderActive as bob: %v, %v; want unknown", led, err)
	}
}
