package main

// The faults: the active agent killed (and a new agent started, so that two stand again), a task's
// backend terminated, the server restarted. Each records when it struck and which task attempts
// were claimed (TAKE or WORK) at that moment: the attempts it may legitimately make run again.

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

type faultKind int

const (
	killActive faultKind = iota
	terminateBackend
	restartServer
)

func (k faultKind) String() string {
	return [...]string{"kill the active agent", "terminate a task backend", "restart the server"}[k]
}

// attemptKey is one attempt of one task.
type attemptKey struct {
	id      int64
	attempt int
}

// fault is a fault as it struck.
type fault struct {
	kind     faultKind
	name     string
	at       time.Time
	inFlight map[attemptKey]string // the attempts claimed when it struck, and their state (TAKE, WORK)
	victim   attemptKey            // terminateBackend: the attempt whose backend was ended
}

// inject strikes a fault of kind.
func inject(ctx context.Context, kind faultKind, e *env, agents *fleet) (*fault, error) {
	f := &fault{kind: kind, inFlight: map[attemptKey]string{}}
	var err error
	switch kind {
	case killActive:
		err = f.killActive(ctx, e, agents)
	case terminateBackend:
		err = f.terminate(ctx, e)
	case restartServer:
		err = f.restart(ctx, e)
	}
	return f, err
}

// killActive kills the agent that leads with SIGKILL, notes the tasks it left claimed, and starts
// a new agent.
//
// The claimed rows are read once the dead agent's statements have resolved: a claim it sent just
// before the kill may still commit after it. Meanwhile this program holds the leader lease's row
// FOR SHARE, so that the standby cannot take the lease and reset those rows before they are read
// (a take is an UPDATE of that row; the looks and the claims only read it). The hold lasts the
// few milliseconds of the wait, against a standby that looks every 2 s.
func (f *fault) killActive(ctx context.Context, e *env, agents *fleet) error {
	if err := agents.waitPair(ctx, e.pool); err != nil {
		return err
	}
	var victim *agentProc
	if err := retry(ctx, func(ctx context.Context) error {
		var err error
		if victim, err = agents.active(ctx, e.pool); err == nil && victim == nil {
			err = errors.New("no agent of this run leads")
		}
		return err
	}); err != nil {
		return fmt.Errorf("find the active agent: %w", err)
	}
	before, err := agentBackends(ctx, e.pool)
	if err != nil {
		return err
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("hold the leader lease: %w", err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(ctx, "SELECT FROM pgjobs.pgj_leader_ FOR SHARE"); err != nil {
		return fmt.Errorf("hold the leader lease: %w", err)
	}
	f.at = time.Now()
	victim.kill()
	f.name = fmt.Sprintf("SIGKILL %s, the active one", victim)
	if err := waitResolved(ctx, e.pool, before); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, claimedRows)
	if err == nil {
		err = collectAttempts(rows, f.inFlight)
	}
	if err == nil {
		err = tx.Commit(ctx)
	}
	if err != nil {
		return fmt.Errorf("read the claimed tasks after the kill: %w", err)
	}
	p, err := agents.start()
	if err != nil {
		return err
	}
	f.name += fmt.Sprintf(", then started %s", p)
	return nil
}

var sleepingTask = regexp.MustCompile(`^SELECT pg_sleep\(([0-9.]+)\); INSERT INTO chaos_effect .* VALUES \((\d+),`)

// terminate ends, with pg_terminate_backend, the backend of a long task that started within the
// last 100 ms: one certainly in its work, not its commit.
func (f *fault) terminate(ctx context.Context, e *env) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pid, k, err := sleepingBackend(ctx, e)
		if err != nil {
			return err
		}
		if pid != 0 {
			err := e.pool.QueryRow(ctx, "SELECT id, attempt FROM pgjobs.task WHERE data = $1", strconv.Itoa(k)).Scan(&f.victim.id, &f.victim.attempt)
			if err != nil {
				return fmt.Errorf("read task k=%d: %w", k, err)
			}
			f.at = time.Now()
			var ended bool
			if err := e.pool.QueryRow(ctx, "SELECT pg_terminate_backend($1)", pid).Scan(&ended); err != nil {
				return fmt.Errorf("terminate backend %d: %w", pid, err)
			}
			if ended {
				f.inFlight[f.victim] = "WORK"
				f.name = fmt.Sprintf("pg_terminate_backend(%d), running task %d (k=%d, attempt %d)", pid, f.victim.id, k, f.victim.attempt)
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("no long task running within 20 s")
		}
		if err := sleepUntil(ctx, time.Now().Add(20*time.Millisecond)); err != nil {
			return err
		}
	}
}

// sleepingBackend returns a backend of the role running a long task that started within 100 ms
// and has at least 0.2 s of sleep, and the task's key; 0 when there is none.
func sleepingBackend(ctx context.Context, e *env) (pid int32, k int, err error) {
	rows, err := e.pool.Query(ctx, `SELECT pid, query FROM pg_stat_activity
		WHERE datname = current_database() AND usename = $1 AND state = 'active'
		  AND query_start > clock_timestamp() - interval '100 ms'`, e.role)
	if err != nil {
		return 0, 0, fmt.Errorf("look for a running task: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var p int32
		var query string
		if err := rows.Scan(&p, &query); err != nil {
			return 0, 0, fmt.Errorf("look for a running task: %w", err)
		}
		if m := sleepingTask.FindStringSubmatch(query); m != nil {
			if sleep, _ := strconv.ParseFloat(m[1], 64); sleep >= 0.2 {
				k, _ = strconv.Atoi(m[2])
				pid = p
			}
		}
	}
	return pid, k, rows.Err()
}

// restart restarts the server (a fast shutdown: every session ends). The claimed rows are read
// just before the stop and again as soon as the server is back, before an agent can reset them:
// what the shutdown caught is in one of the two (a claim between the first read and the stop is
// in the second).
func (f *fault) restart(ctx context.Context, e *env) error {
	if err := claimed(ctx, e.pool, f.inFlight); err != nil {
		return err
	}
	f.at = time.Now()
	stopCtx, cancel := context.WithTimeout(ctx, time.Minute)
	err := e.cluster.Restart(stopCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("restart the server: %w", err)
	}
	conn, err := pgx.Connect(ctx, e.cluster.DSN(database))
	if err != nil {
		return fmt.Errorf("connect after the restart: %w", err)
	}
	rows, err := conn.Query(ctx, claimedRows)
	if err == nil {
		err = collectAttempts(rows, f.inFlight)
	}
	conn.Close(ctx)
	e.pool.Reset() // its sessions ended with the server
	f.name = fmt.Sprintf("restarted the server (down and up again in %.1f s)", time.Since(f.at).Seconds())
	if err != nil {
		return fmt.Errorf("read the claimed tasks after the restart: %w", err)
	}
	return nil
}
