package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/agent/sessions"
)

// The agent's own sessions on a database, beside its leader session. One is kept while the agent
// leads, reserved in the server's budget, for the jobs: the run history and the planning. The
// answers to the standbys and the watch for intruders go on the leader session (dispatcher.do), so
// nothing urgent waits for it. The task service has sessions of its own, up to two (its claims
// beside its writes), opened when it needs them, counted in the budget while they are open and
// closed after taskRecordsIdle unused: a database whose work is jobs keeps one session of its own,
// and with ten databases at max_connections 100 runs get 28 sessions of the budget instead of 18.
const (
	recordsSessions     = 1
	taskRecordsSessions = 2
	taskRecordsIdle     = 30 * time.Second
)

// recordsPool returns the pool of the agent's own session for the jobs.
func (a *dbAgent) recordsPool() (*pgxpool.Pool, error) {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		return a.records, nil
	}
	// It stays open while the agent leads: when the server's connection slots are taken by other
	// clients, the agent still records and plans.
	pool, err := a.ownPool(recordsSessions, recordsSessions, 24*time.Hour, nil)
	if err != nil {
		return nil, err
	}
	unreserve, ok := a.budget.Reserve(recordsSessions)
	if !ok {
		size, fixed := a.budget.Size()
		a.logf(agentlog.LevelEssential, agentlog.StatusStarting, "the session budget of this server (%d) is all taken by the agents' own sessions (%d): runs get one session at a time; raise the sessions setting or max_connections", size, fixed)
	}
	a.records, a.unreserveRecords = pool, unreserve
	return pool, nil
}

// taskRecordsPool returns the pool of the agent's own sessions for the task service.
func (a *dbAgent) taskRecordsPool() (*pgxpool.Pool, error) {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.taskRecords != nil {
		return a.taskRecords, nil
	}
	pool, err := a.ownPool(0, taskRecordsSessions, taskRecordsIdle, &budgeted{budget: a.budget})
	if err != nil {
		return nil, err
	}
	a.taskRecords = pool
	return pool, nil
}

// ownPool returns a pool of the agent's own sessions: minConns kept, maxConns at most, the others closed once
// idle for idle. Each session it opens is counted in the budget by counted, when not nil.
func (a *dbAgent) ownPool(minConns, maxConns int32, idle time.Duration, counted *budgeted) (*pgxpool.Pool, error) {
	cfg, err := a.connConfig("")
	if err != nil {
		return nil, err
	}
	poolCfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	poolCfg.ConnConfig = cfg
	poolCfg.MinConns, poolCfg.MaxConns = minConns, maxConns
	poolCfg.MaxConnIdleTime, poolCfg.MaxConnLifetime = idle, 24*time.Hour
	poolCfg.HealthCheckPeriod = min(time.Minute, idle/3)
	if counted != nil {
		poolCfg.AfterConnect = func(context.Context, *pgx.Conn) error { counted.opened(); return nil }
		poolCfg.BeforeClose = func(*pgx.Conn) { counted.closed() }
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), poolCfg)
	if err != nil {
		return nil, fmt.Errorf("database %d: %w", a.db.ID, err)
	}
	return pool, nil
}

// budgeted counts in the budget the sessions of a pool while they are open.
type budgeted struct {
	budget *sessions.Budget

	mu         sync.Mutex
	unreserves []func()
}

func (b *budgeted) opened() {
	unreserve, _ := b.budget.Reserve(1)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unreserves = append(b.unreserves, unreserve)
}

func (b *budgeted) closed() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.unreserves); n > 0 {
		b.unreserves[n-1]()
		b.unreserves = b.unreserves[:n-1]
	}
}
