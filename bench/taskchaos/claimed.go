package main

// What a fault caught: the task attempts claimed (TAKE or WORK) when it struck, read from the
// table; and, for a kill, the wait for the dead agent's last statements.

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// claimed adds the attempts claimed now (TAKE or WORK) to set.
func claimed(ctx context.Context, pool *pgxpool.Pool, set map[attemptKey]string) error {
	return retry(ctx, func(ctx context.Context) error {
		rows, err := pool.Query(ctx, claimedRows)
		if err != nil {
			return fmt.Errorf("read the claimed tasks: %w", err)
		}
		return collectAttempts(rows, set)
	})
}

const claimedRows = "SELECT id, attempt, state::text FROM pgjobs.task WHERE state IN ('TAKE', 'WORK')"

// collectAttempts adds the rows of claimedRows to set.
func collectAttempts(rows pgx.Rows, set map[attemptKey]string) error {
	var id int64
	var attempt int
	var state string
	_, err := pgx.ForEachRow(rows, []any{&id, &attempt, &state}, func() error {
		set[attemptKey{id, attempt}] = state
		return nil
	})
	return err
}

// caught reports whether the fault struck while attempt a was claimed.
func (f *fault) caught(a attemptKey) bool {
	_, ok := f.inFlight[a]
	return ok
}

// claimedStates tells the attempts the fault caught, by state.
func (f *fault) claimedStates() string {
	var take, work int
	for _, state := range f.inFlight {
		if state == "TAKE" {
			take++
		} else {
			work++
		}
	}
	return fmt.Sprintf("%d attempts claimed (TAKE %d, WORK %d)", take+work, take, work)
}

// agentBackends returns the agents' own sessions (the application_name of database 1, as the
// superuser; the tasks' sessions are the role's).
func agentBackends(ctx context.Context, pool *pgxpool.Pool) ([]int32, error) {
	rows, err := pool.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE application_name = $1 AND usename = current_user`, fmt.Sprintf("pgjobsagent %d", agentID))
	if err != nil {
		return nil, fmt.Errorf("list the agents' sessions: %w", err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return nil, fmt.Errorf("list the agents' sessions: %w", err)
	}
	return pids, nil
}

// waitResolved waits, up to 3 s, until none of the agents' sessions of before runs a statement or
// holds a transaction open, except one waiting for a lock (the standby's take, held up): the
// dead agent's last statements have committed or rolled back. The standby's own looks pass.
func waitResolved(ctx context.Context, pool *pgxpool.Pool, before []int32) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		var busy int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE pid = ANY ($1) AND state <> 'idle' AND wait_event_type IS DISTINCT FROM 'Lock'`, before).Scan(&busy); err != nil {
			return fmt.Errorf("watch the dead agent's sessions: %w", err)
		}
		if busy == 0 || time.Now().After(deadline) {
			return nil
		}
		if err := sleepUntil(ctx, time.Now().Add(5*time.Millisecond)); err != nil {
			return err
		}
	}
}
