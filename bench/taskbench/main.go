// Command taskbench measures the task service on a throwaway cluster with a real server's settings
// and prints each figure beside its goal (issue 13): burn-down against a minimal SKIP LOCKED loop
// and River, insert-to-start latency, the cost of the wake-ups, groups, bloat, and the database's
// cost per task.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/pgtest"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// env is the bench's cluster, the ordinary role that inserts the tasks, and the agent's settings.
type env struct {
	cluster      *pgtest.Cluster
	role         string
	agentOptions agent.Options
	databases    int
	top          int // statements to print by the server's time they took (-top)
}

func main() {
	tasks := flag.Int("tasks", 200000, "no-op tasks of the burn-down")
	only := flag.String("only", "", "run only these parts, comma-separated: burndown, latency, inserts, groups, bloat")
	river := flag.Bool("river", true, "run River's burn-down beside the agent's (go -C bench/river run .)")
	hold := flag.Duration("hold", 5*time.Minute, "how long the bloat measurement holds its snapshot")
	taskRuns := flag.Int("task-runs", 0, "tasks the agent runs at once; 0 means its default")
	logFile := flag.String("log", "", "write the agents' log, at level 5, to this file")
	top := flag.Int("top", 0, "print the statements of the burn-down that took the server the most time, this many")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole program (the agent and the measurements) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "taskbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	var logger *slog.Logger
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "taskbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		logger = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if err := run(*tasks, *only, *river, *hold, *taskRuns, *top, logger); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "taskbench:", err)
		os.Exit(1)
	}
}

func run(tasks int, only string, river bool, hold time.Duration, taskRuns, top int, logger *slog.Logger) error {
	ctx := context.Background()
	track := "top" // -top: the statements inside the functions too
	if top > 0 {
		track = "all"
	}
	cluster, err := pgtest.StartWith(ctx, pgtest.Settings{Durable: true, MaxConnections: 100,
		Extra: []string{"shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=" + track}})
	if err != nil {
		return err
	}
	defer cluster.Close()
	e := &env{cluster: cluster, role: "taskbench_user", agentOptions: agent.Options{TaskRuns: taskRuns}, top: top}
	if logger != nil {
		e.agentOptions.Logger = func(id, _ int) *slog.Logger { return logger.With("db", id) }
	}
	if err := e.exec(ctx, "postgres", "CREATE ROLE "+e.role+" LOGIN"); err != nil {
		return err
	}
	fmt.Printf("taskbench: PostgreSQL %s on %d cores (%s), fsync on, synchronous_commit on, max_connections 100\n",
		e.serverVersion(ctx), runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"))
	part := func(name string) bool { return only == "" || strings.Contains(","+only+",", ","+name+",") }
	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"burndown", func(ctx context.Context) error { return e.reportBurnDown(ctx, tasks, river) }},
		{"latency", e.reportLatency},
		{"inserts", e.reportInserts},
		{"groups", e.reportGroups},
		{"bloat", func(ctx context.Context) error { return e.reportBloat(ctx, hold) }},
	}
	for _, s := range steps {
		if !part(s.name) {
			continue
		}
		if err := s.run(ctx); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// newDatabase creates a database with pgjobs enabled and pg_stat_statements, for one measurement.
func (e *env) newDatabase(ctx context.Context, prefix string) (string, error) {
	e.databases++
	name := fmt.Sprintf("%s_%d", prefix, e.databases)
	if err := e.exec(ctx, "postgres", "CREATE DATABASE "+name); err != nil {
		return "", err
	}
	conn, err := e.connect(ctx, name)
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	if err := sqlschema.Install(ctx, conn); err != nil {
		return "", fmt.Errorf("enable %s: %w", name, err)
	}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION pg_stat_statements; GRANT CREATE ON SCHEMA public TO "+e.role); err != nil {
		return "", fmt.Errorf("prepare %s: %w", name, err)
	}
	return name, nil
}

func (e *env) connect(ctx context.Context, db string) (*pgx.Conn, error) {
	return e.connectAs(ctx, db, "")
}

// connectAs connects to db as role ("": the cluster's superuser).
func (e *env) connectAs(ctx context.Context, db, role string) (*pgx.Conn, error) {
	cfg, err := e.cluster.ConnConfig(db)
	if err != nil {
		return nil, err
	}
	if role != "" {
		cfg.User = role
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", db, err)
	}
	return conn, nil
}

// exec runs sql on db as the superuser.
func (e *env) exec(ctx context.Context, db, sql string, args ...any) error {
	conn, err := e.connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %w", firstLine(sql), err)
	}
	return nil
}

// queryRow scans the one row of sql on db, as the superuser, into dest.
func (e *env) queryRow(ctx context.Context, db, sql string, dest ...any) error {
	conn, err := e.connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, sql).Scan(dest...); err != nil {
		return fmt.Errorf("%s: %w", firstLine(sql), err)
	}
	return nil
}

// walLSN returns the server's current WAL position in bytes.
func (e *env) walLSN(ctx context.Context, db string) (int64, error) {
	var lsn int64
	err := e.queryRow(ctx, db, "/* taskbench */ SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint", &lsn)
	return lsn, err
}

func (e *env) serverVersion(ctx context.Context) string {
	var v string
	if err := e.queryRow(ctx, "postgres", "SHOW server_version", &v); err != nil {
		return "?"
	}
	return v
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
