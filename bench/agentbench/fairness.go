package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// fairness measures how late one job of bob starts when alice has 5,000 jobs due at the same
// minute in the same database.
func fairness(ctx context.Context, cluster *pgtest.Cluster, minutes int) error {
	dbs, err := createDatabases(ctx, cluster, "fair", 1, 0, "")
	if err != nil {
		return err
	}
	defer dropDatabases(ctx, cluster, dbs)
	const aliceJobs = 5000
	r, err := startOffsetsAs(ctx, cluster, dbs, aliceJobs+1, minutes, func(ctx context.Context, conn *pgx.Conn, schedules []string) error {
		_, err := conn.Exec(ctx, `DROP ROLE IF EXISTS bench_alice; DROP ROLE IF EXISTS bench_bob;
			CREATE ROLE bench_alice LOGIN; CREATE ROLE bench_bob LOGIN;
			GRANT USAGE ON SCHEMA pgjobs TO bench_alice, bench_bob;
			GRANT INSERT ON bench_hits TO bench_alice, bench_bob;
			SET ROLE bench_alice`)
		for from := 1; from <= aliceJobs && err == nil; from += 500 { // a transaction's locks are bounded
			_, err = conn.Exec(ctx, `SELECT pgjobs.pgj_create_job('alice' || i, format('public.bench_hit(%L)', 'alice' || i), null, null)
				FROM generate_series($1::int, $2::int) i`, from, min(from+499, aliceJobs))
		}
		if err == nil {
			err = addSchedules(ctx, conn, "alice", schedules)
		}
		if err == nil {
			_, err = conn.Exec(ctx, `SET ROLE bench_bob; SELECT pgjobs.pgj_create_job('bob', 'public.bench_hit(''bob'')', null, null)`)
		}
		if err == nil {
			err = addSchedules(ctx, conn, "bob", schedules)
		}
		return err
	}, false)
	if err != nil {
		return err
	}
	bob := r.byJob["bob"]
	worst := percentile(bob, 100)
	verdict := "ok: <= 100 ms each minute"
	if len(bob) < minutes || worst > 100 {
		verdict = "MISSED: <= 100 ms each minute"
	}
	fmt.Printf("\nfairness: bob's one job while alice has %d due at the same minute, one database, over %d minutes:\n", aliceJobs, minutes)
	fmt.Printf("  bob ran %d of %d, latest start %.1f ms after the minute  %s\n", len(bob), minutes, worst, verdict)
	fmt.Printf("  alice ran %d of %d, p50 %.0f ms, p99 %.0f ms; fires not recorded exactly once: %d\n", len(r.offsets)-len(bob), aliceJobs*minutes, percentile(r.offsets, 50), percentile(r.offsets, 99), r.badRecords)
	return nil
}
