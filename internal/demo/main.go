// Command demo shows pgjobs at work on a throwaway PostgreSQL cluster: it enables a database,
// creates sample jobs and runs pgjobsagent in the foreground until Ctrl-C (make demo).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// sampleJobs are the demo's functions, schedules and jobs, in the SQL API of the specification,
// and a few tasks (docs/tasks.md).
const sampleJobs = `
CREATE TABLE demo_log (at timestamptz DEFAULT clock_timestamp(), note text);
CREATE FUNCTION demo_note(note text) RETURNS void LANGUAGE sql AS $$ INSERT INTO demo_log (note) VALUES (note) $$;
CREATE FUNCTION demo_fail() RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'this job fails on purpose'; END $$;
SELECT pgj_create_startup_job('Hello', 'demo_note(''the agent started'')');
SELECT pgj_create_schedule('EveryMinute', 'I 0:01');
SELECT pgj_create_schedule('MondayMorning', 'W 1 7:30');
SELECT pgj_create_job('Tick', 'demo_note(''tick'')', null, 'EveryMinute');
SELECT pgj_create_job('Broken', 'demo_fail()', null, 'EveryMinute');
SELECT pgj_create_job('Report', 'demo_note(''weekly report'')', null, 'MondayMorning');
INSERT INTO task (input) VALUES ('SELECT current_user AS who, 6 * 7 AS answer');
INSERT INTO task (plan, input) VALUES (now() + interval '20 seconds', 'SELECT ''planned 20 s later''');
INSERT INTO task (repeat, input) VALUES ('30 seconds', 'SELECT ''every 30 s'', now()');
INSERT INTO task ("group", max, input) SELECT 'pair', 1, 'SELECT pg_sleep(2), ' || g FROM generate_series(1, 4) g;
INSERT INTO task (retries, retry_delay, input) VALUES (1, '5 seconds', 'SELECT 1/0');
`

func main() {
	bin := flag.String("bin", "bin", "directory of the pgjobs and pgjobsagent programs")
	duration := flag.Duration("for", 0, "stop the agent after this long (default: at Ctrl-C)")
	flag.Parse()
	if err := run(*bin, *duration); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(bin string, duration time.Duration) error {
	ctx := context.Background()
	fmt.Println("== starting a throwaway PostgreSQL cluster")
	cluster, err := pgtest.Start(ctx)
	if err != nil {
		return err
	}
	defer func() {
		fmt.Println("== removing the cluster")
		if err := cluster.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
	}()
	dir, err := os.MkdirTemp("", "pgjobs-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	conf, logDir := filepath.Join(dir, "pgjobs.conf"), filepath.Join(dir, "log")

	admin, err := pgx.Connect(ctx, cluster.DSN("postgres"))
	if err != nil {
		return err
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE demo")
	admin.Close(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("== pgjobs enabledb -d demo --config %s\n", conf)
	enable := exec.Command(filepath.Join(bin, "pgjobs"), "enabledb", "--config", conf,
		"-h", cluster.Host(), "-p", strconv.Itoa(cluster.Port()), "-d", "demo", "-u", cluster.User())
	enable.Stdout, enable.Stderr = os.Stdout, os.Stderr
	if err := enable.Run(); err != nil {
		return fmt.Errorf("enabledb: %w", err)
	}
	for _, setting := range [][]string{{"updatemaster", "-l", "2"}, {"updatedb", "-h", cluster.Host(), "-p", strconv.Itoa(cluster.Port()), "-d", "demo", "-l", "2"}} {
		if out, err := exec.Command(filepath.Join(bin, "pgjobs"), append([]string{setting[0], "--config", conf}, setting[1:]...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("%s: %v: %s", setting[0], err, out)
		}
	}
	conn, err := pgx.Connect(ctx, cluster.DSN("demo"))
	if err != nil {
		return err
	}
	fmt.Print("== creating sample jobs:", sampleJobs)
	_, err = conn.Exec(ctx, sampleJobs)
	conn.Close(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("== running pgjobsagent --foreground (logs also in %s); Ctrl-C stops it\n", logDir)
	fmt.Printf("   meanwhile: psql '%s' -c 'SELECT * FROM pgj_jobs' -c 'SELECT * FROM pgj_runs' -c 'TABLE task'\n\n", cluster.DSN("demo"))
	agent := exec.Command(filepath.Join(bin, "pgjobsagent"), "--config", conf, "--log-dir", logDir, "--foreground", "--grace", "5s")
	agent.Stdout, agent.Stderr = os.Stdout, os.Stderr
	// The agent has a process group of its own, as the cluster's server has: a Ctrl-C in the
	// terminal reaches the demo only, which passes it on once, so the agent stops softly; then the
	// demo prints the history and stops the server.
	agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(signals)
	if err := agent.Start(); err != nil {
		return fmt.Errorf("start pgjobsagent: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- agent.Wait() }()
	var timeout <-chan time.Time
	if duration > 0 {
		timeout = time.After(duration)
	}
	for {
		select {
		case err := <-exited:
			var exitErr *exec.ExitError
			if err != nil && !errors.As(err, &exitErr) {
				return err
			}
			return summary(ctx, cluster)
		case <-timeout:
			_ = agent.Process.Signal(syscall.SIGTERM)
		case sig := <-signals:
			_ = agent.Process.Signal(sig) // also when the signal came from elsewhere
		}
	}
}

// summary prints the run history the demo produced.
func summary(ctx context.Context, cluster *pgtest.Cluster) error {
	conn, err := pgx.Connect(ctx, cluster.DSN("demo"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, _ := conn.Query(ctx, `SELECT format('%-8s %-9s %s', job, status, coalesce(message, '')) FROM pgj_runs ORDER BY started NULLS LAST`)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	fmt.Println("\n== the run history (SELECT * FROM pgj_runs):")
	for _, l := range lines {
		fmt.Println("  ", l)
	}
	rows, _ = conn.Query(ctx, `SELECT format('%3s %-4s attempt %s  %s', id, state, attempt,
		replace(coalesce(output, error, ''), E'\n', ' | ')) FROM task ORDER BY id`)
	if lines, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return err
	}
	fmt.Println("\n== the tasks (SELECT id, state, attempt, output, error FROM task):")
	for _, l := range lines {
		fmt.Println("  ", l)
	}
	return nil
}
