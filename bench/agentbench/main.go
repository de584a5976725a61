// Command agentbench measures the agent on a throwaway cluster and prints its figures: how late
// runs start after their minute, the statements it sends while idle, and its memory and
// connections with many databases.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
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
	idle := flag.Duration("idle", time.Minute, "how long the idle measurements watch the agent")
	scaleDBs := flag.Int("scale-dbs", 30, "databases of the memory and connections measurement (2 sessions each; the server allows 100, and sessions of the earlier measurements may still be closing)")
	minutes := flag.Int("minutes", 3, "how many consecutive minutes each start-offset measurement fires")
	only := flag.String("only", "", "run only one part: offsets, fairness, idle or scale")
	sessions := flag.Int("sessions", 0, "the agent's session budget per server; 0 means its default, half the server's connections for ordinary roles")
	maxRuns := flag.Int("max-runs", 0, "runs at once per database; 0 means the agent's default")
	starting := flag.Int("starting", 0, "runs of the server starting at once; 0 means the agent's default")
	logFile := flag.String("log", "", "write the agent's log of the start-offset measurements, at level 5, to this file")
	scenarios := flag.String("scenarios", "50/1,500/1,1000/10", "the start-offset measurements to run, as JOBS/DATABASES")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole program (the agent and the measurements) to this file")
	allocProfile := flag.String("allocprofile", "", "write a profile of the whole program's allocations to this file at the end")
	flag.Parse()
	if *allocProfile != "" {
		defer writeAllocProfile(*allocProfile)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	agentOptions = agent.Options{Sessions: *sessions, MaxRuns: *maxRuns, StartingMax: *starting}
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		logger := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
		agentOptions.Logger = func(id, _ int) *slog.Logger { return logger.With("db", id) }
	}
	if err := run(*idle, *scaleDBs, *minutes, *only, *scenarios); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "agentbench:", err)
		os.Exit(1)
	}
}

// writeAllocProfile writes the allocations of the whole program so far to path.
func writeAllocProfile(path string) {
	f, err := os.Create(path)
	if err == nil {
		err = pprof.Lookup("allocs").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentbench:", err)
	}
}

// agentOptions are the agent's settings the flags choose; the measurements add their own.
var agentOptions agent.Options

func run(idle time.Duration, scaleDBs, minutes int, only, scenarios string) error {
	ctx := context.Background()
	// A real server's settings: what a user runs the agent against.
	cluster, err := pgtest.StartWith(ctx, pgtest.Settings{Durable: true, MaxConnections: 100})
	if err != nil {
		return err
	}
	defer cluster.Close()
	budget := "the agent's default session budget"
	if agentOptions.Sessions > 0 {
		budget = fmt.Sprintf("a session budget of %d", agentOptions.Sessions)
	}
	if agentOptions.MaxRuns > 0 {
		budget += fmt.Sprintf(", %d runs at once per database", agentOptions.MaxRuns)
	}
	if agentOptions.StartingMax > 0 {
		budget += fmt.Sprintf(", %d runs starting at once", agentOptions.StartingMax)
	}
	fmt.Println("cluster: fsync, synchronous_commit and full_page_writes on, max_connections 100; " + budget)
	if only == "" || only == "offsets" {
		if err := offsetScenarios(ctx, cluster, minutes, scenarios); err != nil {
			return err
		}
	}
	if only == "" || only == "fairness" {
		if err := fairness(ctx, cluster, minutes); err != nil {
			return err
		}
	}
	if only != "" && only != "idle" {
		if only == "scale" {
			return scale(ctx, cluster, scaleDBs)
		}
		return nil
	}

	dbs, err := createDatabases(ctx, cluster, "idle", 1, 0, "")
	if err != nil {
		return err
	}
	statements, err := idleStatements(ctx, cluster, dbs[0], idle, false)
	if err != nil {
		return err
	}
	verdict := "ok: goal 0"
	if statements > 0 {
		verdict = "MISSED: goal 0"
	}
	fmt.Printf("\nstatements the agent sent while idle with 100 jobs scheduled: %d in %s (%.1f per minute)  %s\n", statements, idle, float64(statements)/idle.Minutes(), verdict)
	statements, err = idleStatements(ctx, cluster, dbs[0], idle, true)
	if err != nil {
		return err
	}
	fmt.Printf("statements of a leader and a standby waiting behind it: %d in %s (%.1f per minute; bounded: a look every 2 s, an answer at most once a second)\n", statements, idle, float64(statements)/idle.Minutes())
	if err := dropDatabases(ctx, cluster, dbs); err != nil {
		return err
	}
	if only == "idle" {
		return nil
	}
	return scale(ctx, cluster, scaleDBs)
}

// dropDatabases drops the databases of a measurement, so that the next has the server to itself.
func dropDatabases(ctx context.Context, cluster *pgtest.Cluster, dbs []string) error {
	admin, err := pgx.Connect(ctx, cluster.DSN("postgres"))
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	for _, db := range dbs {
		if _, err := admin.Exec(ctx, "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	return nil
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

// addSchedules makes the schedules, named prefix0, prefix1, ..., and adds them to every job of the
// session's role.
func addSchedules(ctx context.Context, conn *pgx.Conn, prefix string, schedules []string) error {
	for m, text := range schedules {
		name := fmt.Sprintf("%s%d", prefix, m)
		if _, err := conn.Exec(ctx, "SELECT pgjobs.pgj_create_schedule($1, $2)", name, text); err != nil {
			return err
		}
		for offset := 0; ; offset += 500 { // a transaction's locks are bounded
			tag, err := conn.Exec(ctx, `SELECT pgjobs.pgj_add_job_schedule(name, $1)
				FROM (SELECT name FROM pgjobs.pgj_jobs WHERE owner = current_user ORDER BY name OFFSET $2 LIMIT 500) j`, name, offset)
			if err != nil {
				return err
			}
			if tag.RowsAffected() < 500 {
				break
			}
		}
	}
	return nil
}
