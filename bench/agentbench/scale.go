package main

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// scale runs the agent on n databases of 100 jobs each and prints its memory and connections.
func scale(ctx context.Context, cluster *pgtest.Cluster, n int) error {
	dbs, err := createDatabases(ctx, cluster, "scale", n, 100, "D 2099.01.01 0:00")
	if err != nil {
		return err
	}
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	goroutinesBefore := runtime.NumGoroutine()
	m := agent.NewMaster(agent.Options{Name: "agentbench"}, slog.New(slog.DiscardHandler))
	var rows []agent.Database
	for i, db := range dbs {
		rows = append(rows, agent.Database{ID: i + 1, DSN: cluster.DSN(db)})
	}
	started := time.Now()
	m.Apply(rows)
	defer m.Stop(10 * time.Second)
	admin, err := pgx.Connect(ctx, cluster.DSN("postgres"))
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	var planned, conns int
	for deadline := time.Now().Add(2 * time.Minute); ; {
		planned = 0
		for _, db := range dbs[:min(len(dbs), 5)] { // a sample: each database plans when its agent is active
			conn, err := pgx.Connect(ctx, cluster.DSN(db))
			if err != nil {
				return err
			}
			var k int
			err = conn.QueryRow(ctx, "SELECT count(*) FROM pgjobs.pgj_fire_ WHERE firenext IS NOT NULL").Scan(&k)
			conn.Close(ctx)
			if err != nil {
				return err
			}
			planned += k
		}
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pgjobsagent%'").Scan(&conns); err != nil {
			return err
		}
		if (planned == 100*min(len(dbs), 5) && conns >= len(dbs)) || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	ready := time.Since(started)
	time.Sleep(2 * time.Second)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'pgjobsagent%'").Scan(&conns); err != nil {
		return err
	}
	fmt.Printf("\n%d databases x 100 jobs: all active and planned in %s\n", len(dbs), ready.Round(100*time.Millisecond))
	fmt.Printf("  agent heap in use: %.1f MiB (%.1f KiB per database), memory from the OS: %.1f MiB\n",
		float64(after.HeapInuse-before.HeapInuse)/(1<<20), float64(after.HeapInuse-before.HeapInuse)/1024/float64(len(dbs)), float64(after.Sys)/(1<<20))
	fmt.Printf("  goroutines: %d (%.1f per database)\n", runtime.NumGoroutine()-goroutinesBefore, float64(runtime.NumGoroutine()-goroutinesBefore)/float64(len(dbs)))
	fmt.Printf("  connections to the server: %d (%.1f per database: the leader session and the session of the run history)\n", conns, float64(conns)/float64(len(dbs)))
	return nil
}
