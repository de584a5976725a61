// Command agentbench measures the agent on a throwaway cluster and prints its figures: how late
// runs start after their minute, the statements it sends while idle, and its memory and
// connections with many databases.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/pgtest"
	"github.com/pgjobs/pgjobs/sqlschema"
)

const benchFunctions = `
CREATE TABLE bench_hits (job text, at timestamptz);
CREATE FUNCTION bench_hit(job text) RETURNS void LANGUAGE sql AS $$ INSERT INTO bench_hits VALUES (job, clock_timestamp()) $$;
`

func main() {
	idle := flag.Duration("idle", time.Minute, "how long the idle measurement watches the agent")
	scaleDBs := flag.Int("scale-dbs", 100, "databases of the memory and connections measurement")
	flag.Parse()
	if err := run(*idle, *scaleDBs); err != nil {
		fmt.Fprintln(os.Stderr, "agentbench:", err)
		os.Exit(1)
	}
}

func run(idle time.Duration, scaleDBs int) error {
	ctx := context.Background()
	cluster, err := pgtest.Start(ctx)
	if err != nil {
		return err
	}
	defer cluster.Close()
	dbs, err := createDatabases(ctx, cluster, "bench", 10, 0, "")
	if err != nil {
		return err
	}
	fmt.Println("start offset of runs after their minute, from each job's own clock_timestamp() (10 databases):")
	fmt.Printf("  %-6s %8s %8s %8s  %s\n", "jobs", "p50 ms", "p99 ms", "max ms", "goal")
	for _, jobs := range []int{1, 50, 100, 1000} {
		offsets, err := startOffsets(ctx, cluster, dbs, jobs)
		if err != nil {
			return err
		}
		goal, limit := "", 0.0
		switch jobs {
		case 50:
			goal, limit = "p99 < 20 ms", 20
		case 1000:
			goal, limit = "p99 < 50 ms", 50
		}
		if limit > 0 {
			if percentile(offsets, 99) < limit {
				goal = "ok: " + goal
			} else {
				goal = "MISSED: " + goal
			}
		}
		fmt.Printf("  %-6d %8.1f %8.1f %8.1f  %s\n", jobs, percentile(offsets, 50), percentile(offsets, 99), percentile(offsets, 100), goal)
	}

	statements, err := idleStatements(ctx, cluster, dbs[0], idle)
	if err != nil {
		return err
	}
	perMinute := float64(statements) / idle.Minutes()
	verdict := "ok: goal 0"
	if statements > 0 {
		verdict = "MISSED: goal 0"
	}
	fmt.Printf("\nstatements the agent sent while idle with 100 jobs scheduled: %d in %s (%.1f per minute)  %s\n", statements, idle, perMinute, verdict)

	return scale(ctx, cluster, scaleDBs)
}

// createDatabases creates n enabled databases with the bench functions and jobsPerDB jobs on
// schedule text each, by copying a template.
func createDatabases(ctx context.Context, cluster *pgtest.Cluster, prefix string, n, jobsPerDB int, schedule string) ([]string, error) {
	admin, err := pgx.Connect(ctx, cluster.DSN("postgres"))
	if err != nil {
		return nil, err
	}
	defer admin.Close(ctx)
	template := prefix + "_template"
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+template); err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, cluster.DSN(template))
	if err != nil {
		return nil, err
	}
	err = sqlschema.Install(ctx, conn)
	if err == nil {
		_, err = conn.Exec(ctx, benchFunctions)
	}
	if err == nil && jobsPerDB > 0 {
		_, err = conn.Exec(ctx, "SELECT pgjobs.pgj_create_schedule('bench', $1)", schedule)
		if err == nil {
			_, err = conn.Exec(ctx, `SELECT pgjobs.pgj_create_job('j' || i, format('bench_hit(%L)', 'j' || i), null, 'bench')
				FROM generate_series(1, $1) i`, jobsPerDB)
		}
	}
	conn.Close(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s_%d", prefix, i)
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// shiftedClock is the real clock moved by an offset, so that a minute comes in seconds.
type shiftedClock struct{ offset time.Duration }

func (c shiftedClock) Now() time.Time                       { return time.Now().Add(c.offset) }
func (c shiftedClock) NewTimer(d time.Duration) agent.Timer { return agent.RealClock{}.NewTimer(d) }

// startOffsets runs `jobs` jobs spread over the databases, all due in the same minute, and
// returns how late each started, in milliseconds.
func startOffsets(ctx context.Context, cluster *pgtest.Cluster, dbs []string, jobs int) ([]float64, error) {
	minute := time.Now().Truncate(time.Minute).Add(30 * time.Minute).UTC()
	for i, db := range dbs {
		conn, err := pgx.Connect(ctx, cluster.DSN(db))
		if err != nil {
			return nil, err
		}
		_, err = conn.Exec(ctx, "TRUNCATE pgjobs.pgj_run_, pgjobs.pgj_fire_, pgjobs.pgj_job_schedule_, pgjobs.pgj_job_, pgjobs.pgj_schedule_, bench_hits CASCADE")
		if err == nil {
			_, err = conn.Exec(ctx, "SELECT pgjobs.pgj_create_schedule('bench', $1)", fmt.Sprintf("D %02d", minute.Minute()))
		}
		if err == nil {
			_, err = conn.Exec(ctx, `SELECT pgjobs.pgj_create_job('j' || i, format('bench_hit(%L)', 'j' || i), null, 'bench')
				FROM generate_series(1, $1) i WHERE (i - 1) % $2 = $3`, jobs, len(dbs), i)
		}
		conn.Close(ctx)
		if err != nil {
			return nil, err
		}
	}
	// The minute comes 4 s after the agent starts, however long creating the jobs took (each
	// pgj_create_job resolves its call in a temporary view: a few ms).
	offset := minute.Sub(time.Now().Add(4 * time.Second))
	m := agent.NewMaster(agent.Options{Clock: shiftedClock{offset}, Location: time.UTC, Name: "agentbench"}, slog.New(slog.DiscardHandler))
	var rows []agent.Database
	for i, db := range dbs {
		rows = append(rows, agent.Database{ID: i + 1, DSN: cluster.DSN(db)})
	}
	m.Apply(rows)
	defer m.Stop(10 * time.Second)
	realMinute := minute.Add(-offset)
	// Look only after the minute: the bench's own sessions must not compete with the runs.
	time.Sleep(time.Until(realMinute.Add(time.Second)))
	var offsets []float64
	deadline := time.Now().Add(60 * time.Second)
	for len(offsets) < jobs {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%d jobs: only %d ran", jobs, len(offsets))
		}
		offsets = offsets[:0]
		for _, db := range dbs {
			conn, err := pgx.Connect(ctx, cluster.DSN(db))
			if err != nil {
				return nil, err
			}
			rows, _ := conn.Query(ctx, "SELECT extract(epoch FROM at)::float8 FROM bench_hits")
			times, err := pgx.CollectRows(rows, pgx.RowTo[float64])
			conn.Close(ctx)
			if err != nil {
				return nil, err
			}
			for _, t := range times {
				offsets = append(offsets, (t-float64(realMinute.UnixMicro())/1e6)*1000)
			}
		}
		if len(offsets) < jobs {
			time.Sleep(200 * time.Millisecond)
		}
	}
	return offsets, nil
}

// idleStatements counts the statements the agent's sessions send while nothing is due, from the
// server's log with log_statement = all.
func idleStatements(ctx context.Context, cluster *pgtest.Cluster, db string, window time.Duration) (int, error) {
	conn, err := pgx.Connect(ctx, cluster.DSN(db))
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	weekly := fmt.Sprintf("W %d %d:%02d", (int(time.Now().Weekday())+3)%7, time.Now().Hour(), time.Now().Minute())
	for _, step := range []struct {
		sql  string
		args []any
	}{
		{"TRUNCATE pgjobs.pgj_run_, pgjobs.pgj_fire_, pgjobs.pgj_job_schedule_, pgjobs.pgj_job_, pgjobs.pgj_schedule_ CASCADE", nil},
		{"SELECT pgjobs.pgj_create_schedule('later', 'D 2099.01.01 0:00'), pgjobs.pgj_create_schedule('weekly', $1)", []any{weekly}},
		{`SELECT pgjobs.pgj_create_job('j' || i, format('bench_hit(%L)', 'j' || i), null, CASE WHEN i % 2 = 0 THEN 'later' ELSE 'weekly' END)
			FROM generate_series(1, 100) i`, nil},
		{"ALTER SYSTEM SET log_statement = 'all'", nil},
		{"ALTER SYSTEM SET log_line_prefix = '%m app=%a: '", nil},
		{"SELECT pg_reload_conf()", nil},
	} {
		if _, err := conn.Exec(ctx, step.sql, step.args...); err != nil {
			return 0, fmt.Errorf("%s: %w", step.sql, err)
		}
	}
	defer conn.Exec(ctx, "ALTER SYSTEM RESET log_statement; ALTER SYSTEM RESET log_line_prefix; SELECT pg_reload_conf()")
	m := agent.NewMaster(agent.Options{Name: "agentbench"}, slog.New(slog.DiscardHandler))
	m.Apply([]agent.Database{{ID: 1, DSN: cluster.DSN(db)}})
	defer m.Stop(10 * time.Second)
	time.Sleep(3 * time.Second) // start-up: connect, load, plan
	start, err := logSize(cluster.LogPath())
	if err != nil {
		return 0, err
	}
	time.Sleep(window)
	return countStatements(cluster.LogPath(), start, "app=pgjobsagent")
}

func logSize(path string) (int64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

// countStatements counts the logged statements from offset on whose line has marker.
func countStatements(path string, offset int64, marker string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return 0, err
	}
	n := 0
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.Contains(line, marker) && (strings.Contains(line, "statement: ") || strings.Contains(line, "execute ")) {
			n++
		}
	}
	return n, scanner.Err()
}

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

func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}
