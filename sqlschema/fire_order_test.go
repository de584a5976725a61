package sqlschema_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestFireRowsAreWrittenInJobOrder: every statement of the agent that writes several rows of
// pgj_fire_ (plans, claims, the ends of runs) locks them in the order of their job ids, whatever
// the order it is given them in, so that two of them never deadlock. A run ending while the plans
// were written did: the deadlock ended the leader's term. Each writer is given jobs 2 then 1 while
// another session holds job 1's row: once it waits, job 2's row must still be free.
func TestFireRowsAreWrittenInJobOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enabledDatabase(t)
	admin := cluster.Connect(t, db)
	mustExec(t, admin, `CREATE FUNCTION off_line() RETURNS void LANGUAGE sql AS '';
		SELECT pgjobs.pgj_create_job('one', 'off_line()', null, null);
		SELECT pgjobs.pgj_create_job('two', 'off_line()', null, null)`)
	lease, err := sqlschema.LeaderLook(ctx, admin, false)
	if err != nil {
		t.Fatal(err)
	}
	epoch, _, ok, err := sqlschema.LeaderTake(ctx, admin, "test agent", lease, "UTC")
	if err != nil || !ok {
		t.Fatalf("LeaderTake = %v, %v", ok, err)
	}
	now := time.Now().Truncate(time.Second)
	if err := sqlschema.JobPlan(ctx, admin, []int{1, 2}, []*time.Time{&now, &now}); err != nil {
		t.Fatal(err)
	}
	run := func(job int) sqlschema.RunEnd {
		return sqlschema.RunEnd{
			Run:    sqlschema.Run{JobID: job, JobName: "j", Owner: "postgres", OwnerID: 10, Scheduled: &now, Agent: "test agent", Started: now},
			Result: sqlschema.RunResult{Status: sqlschema.RunOK, Finished: now},
		}
	}
	later := now.Add(time.Hour)
	writers := []struct {
		name  string
		write func(ctx context.Context, conn *pgx.Conn) error
	}{
		{"JobPlan", func(ctx context.Context, conn *pgx.Conn) error {
			return sqlschema.JobPlan(ctx, conn, []int{2, 1}, []*time.Time{&later, &later})
		}},
		{"FireClaim", func(ctx context.Context, conn *pgx.Conn) error {
			_, err := sqlschema.FireClaim(ctx, conn, []int{2, 1}, []time.Time{later, later}, epoch)
			return err
		}},
		{"RunRecordEnds", func(ctx context.Context, conn *pgx.Conn) error {
			_, err := sqlschema.RunRecordEnds(ctx, conn, []sqlschema.RunEnd{run(2), run(1)})
			return err
		}},
	}
	for _, w := range writers {
		t.Run(w.name, func(t *testing.T) {
			holder := cluster.Connect(t, db)
			writer := cluster.Connect(t, db)
			probe := cluster.Connect(t, db)
			mustExec(t, holder, "BEGIN; SELECT FROM pgjobs.pgj_fire_ WHERE firejobid = 1 FOR UPDATE")
			done := make(chan error, 1)
			go func() { done <- w.write(ctx, writer) }()
			waitBlocked(t, probe, writer.PgConn().PID(), done)
			_, err := probe.Exec(ctx, "SELECT FROM pgjobs.pgj_fire_ WHERE firejobid = 2 FOR UPDATE NOWAIT")
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "55P03" {
				t.Errorf("%s locked job 2's row before job 1's", w.name)
			} else if err != nil {
				t.Fatal(err)
			}
			mustExec(t, holder, "COMMIT")
			if err := <-done; err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
		})
	}
}

// waitBlocked waits until the session pid waits for a lock, or fails the test if the statement
// it runs ended (done) or it did not wait within 10 s.
func waitBlocked(t *testing.T, probe *pgx.Conn, pid uint32, done <-chan error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var waiting bool
		if err := probe.QueryRow(context.Background(), "SELECT cardinality(pg_blocking_pids($1)) > 0", pid).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the writer ended without waiting for job 1's row: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the writer did not wait for job 1's row within 10 s")
		}
	}
}
