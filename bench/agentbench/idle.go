package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// idleStatements counts the statements the agent's sessions send while nothing is due, from the
// server's log with log_statement = all; with standby, those of a leader and a second agent
// standing by behind it.
func idleStatements(ctx context.Context, cluster *pgtest.Cluster, db string, window time.Duration, standby bool) (int, error) {
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
	if standby {
		s := agent.NewMaster(agent.Options{Name: "agentbench standby"}, slog.New(slog.DiscardHandler))
		s.Apply([]agent.Database{{ID: 1, DSN: cluster.DSN(db)}})
		defer s.Stop(10 * time.Second)
	}
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
