package main

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTasksRunOnceAcrossAKilledAgent is seed 002's exactly-once check with the built agent: several
// sessions insert tasks while two agents serve the database, and the active one is killed
// (SIGKILL) once. Every task is executed, and executed once unless the next agent reset it after
// the kill: each duplicate in the table the tasks write is a task with a second attempt.
func TestTasksRunOnceAcrossAKilledAgent(t *testing.T) {
	t.Parallel()
	db, conf := enabled(t, 1)
	ctx := context.Background()
	conn := cluster.Connect(t, db)
	alice := cluster.NewRole(t, "alice", db)
	if _, err := conn.Exec(ctx, "CREATE TABLE done (task bigint, at timestamptz DEFAULT clock_timestamp()); GRANT ALL ON done TO PUBLIC"); err != nil {
		t.Fatal(err)
	}
	first := startAgent(t, conf)
	waitFor(t, "the first agent to lead", func() bool { return containsLine(first.logLines(t, "7"), "active on") })
	second := startAgent(t, conf)
	waitFor(t, "the second agent to stand by", func() bool { return containsLine(second.logLines(t, "7"), "standing by to take over") })

	const writers, each = 4, 150
	input := "SELECT pg_sleep(0.002); INSERT INTO done (task) SELECT current_setting('pgjobs.task_id')::bigint"
	var inserting sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		inserting.Add(1)
		go func() {
			defer inserting.Done()
			cfg, err := cluster.ConnConfig(db)
			if err != nil {
				errs <- err
				return
			}
			cfg.User = alice
			c, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close(ctx)
			for i := 0; i < each; i++ {
				if _, err := c.Exec(ctx, "INSERT INTO task (\"group\", max, input) VALUES ($1, 3, $2)", fmt.Sprint("g", i%3), input); err != nil {
					errs <- err
					return
				}
				time.Sleep(2 * time.Millisecond) // spread over the kill, as clients would be
			}
		}()
	}
	waitFor(t, "a quarter of the tasks to run", func() bool {
		var n int
		return conn.QueryRow(ctx, "SELECT count(*) FROM done").Scan(&n) == nil && n >= writers*each/4
	})
	if code := first.stop(t, syscall.SIGKILL); code != -1 {
		t.Fatalf("SIGKILL: exit code %d", code)
	}
	inserting.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("insert a task: %v", err)
	}
	waitFor(t, "the takeover", func() bool { return containsLine(second.logLines(t, "7"), "taking over as the active agent") })
	total := writers * each
	deadline := time.Now().Add(60 * time.Second)
	for {
		var ended int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pgjobs.task WHERE state = 'DONE'").Scan(&ended); err != nil {
			t.Fatal(err)
		}
		if ended == total {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks DONE after the takeover", ended, total)
		}
		time.Sleep(200 * time.Millisecond)
	}
	var rows, distinct, unmatched, reset int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM done), (SELECT count(DISTINCT task) FROM done),
		(SELECT count(*) FROM (SELECT task FROM done GROUP BY task HAVING count(*) > 1) d JOIN pgjobs.task t ON t.id = d.task WHERE t.attempt < 2),
		(SELECT count(*) FROM pgjobs.task WHERE attempt >= 2)`).Scan(&rows, &distinct, &unmatched, &reset); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d tasks, %d executions, %d reset after the kill", total, rows, reset)
	if distinct != total {
		t.Fatalf("%d distinct tasks executed, want %d", distinct, total)
	}
	if unmatched != 0 || rows-distinct > reset {
		t.Fatalf("%d executions of %d tasks: %d duplicates of tasks never reset, %d reset", rows, total, unmatched, reset)
	}
	if code := second.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}
