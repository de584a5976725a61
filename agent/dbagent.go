package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/agent/jobs"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/agent/task"
	"github.com/pgjobs/pgjobs/internal/metrics"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// standbyRetryMax is the longest pause between tries while the server that answers is a standby
// in recovery (pointed at alone, or the only one of a host list up, whose read-write server is
// gone): the agent follows a promotion within it, plus a connection, whatever RetryMax is.
const standbyRetryMax = 5 * time.Second

// pruneEvery is how often, at most, the agent deletes the runs older than the retention setting.
const pruneEvery = time.Hour

// dbAgent serves one database: it holds the leader lease and runs the services of each term.
type dbAgent struct {
	db  Database
	opt Options
	log *slog.Logger

	runCtx context.Context // runs are cancelled when it ends

	budget *sessions.Budget // the sessions of the database's server
	// scramIterations is the most SCRAM iterations computed to log in as an owner (the master's).
	scramIterations *atomic.Int64
	owners          *sessions.Pool // the sessions of the job owners, MaxRuns lent at most
	poolsMu         sync.Mutex
	records         *pgxpool.Pool // the agent's own sessions: run history and planning
	// unreserveRecords gives the records' sessions back to the budget.
	unreserveRecords func()

	jobs *jobs.Service

	taskOwners *sessions.Pool // the sessions of the task owners, TaskRuns lent at most
	tasks      *task.Service

	startupDone atomic.Bool // startup jobs ran in this agent's life
	// noTransactionTimeout: the server refused transaction_timeout (before PostgreSQL 17), so the
	// sessions that end backends no longer name it.
	noTransactionTimeout atomic.Bool
	anchor               time.Time // the instant interval schedules count from: the agent's start, or its takeover

	pruned time.Time // when old runs were last deleted; the upkeep's
	// orphanViews are the views of former calls no job used at the last prune, dropped at the next
	// if still unused: a run of a job loaded before its call changed may use its old view meanwhile.
	// The callViews service's.
	orphanViews []string
	// sweepDue tells the callViews service that a prune is done: its drop of orphanViews is due.
	sweepDue chan struct{}

	status  statusBoard       // where it stands, for /readyz
	metrics *metrics.Database // nil: none
}

func newDBAgent(db Database, opt Options, runCtx context.Context, budget *sessions.Budget, scramIterations *atomic.Int64) *dbAgent {
	a := &dbAgent{
		db:              db,
		opt:             opt,
		log:             opt.Logger(db.ID, db.LogLevel),
		runCtx:          runCtx,
		budget:          budget,
		scramIterations: scramIterations,
		anchor:          opt.Start,
		metrics:         opt.Metrics.Database(db.ID, db.name()),
		sweepDue:        make(chan struct{}, 1),
	}
	a.status.s = DatabaseStatus{ID: db.ID, Database: db.name(), State: StateStarting, Since: opt.Clock.Now()}
	a.metrics.State(false, false, false)
	a.owners = budget.NewPool(runCtx, opt.MaxRuns, a.openOwnerSession)
	a.owners.Warnf = func(format string, args ...any) {
		a.logf(agentlog.LevelError, agentlog.StatusFiring, format, args...)
	}
	a.owners.OpenToEnd = a.openSessionToEnd
	a.taskOwners = budget.NewUnwarmedPool(runCtx, opt.TaskRuns, a.openOwnerSession)
	a.tasks = task.New(runCtx, task.Config{
		Clock: opt.Clock, Location: opt.Location, Log: a.log, Sessions: a.taskOwners, Slots: opt.TaskRuns, Metrics: a.metrics,
		MaxIterations: a.maxIterations,
		OnWritten: func() {
			if opt.OnTasksWritten != nil {
				opt.OnTasksWritten(db.ID)
			}
		},
		OnClaimed: func(took time.Duration, claimed int) {
			if opt.OnTasksClaimed != nil {
				opt.OnTasksClaimed(db.ID, took, claimed)
			}
		},
	})
	a.jobs = jobs.New(runCtx, jobs.Config{
		Name: opt.Name, Clock: opt.Clock, Location: opt.Location, Log: a.log,
		Budget: budget, Owners: a.owners, Records: a.recordsPool, Metrics: a.metrics,
		OnIdle:    func() { a.event(EventIdle) },
		OnRefused: func() { a.event(EventRunRefused) },
		OnReload: func() {
			if opt.OnReload != nil {
				opt.OnReload(db.ID)
			}
		},
	})
	return a
}

func (a *dbAgent) logf(level slog.Level, status, format string, args ...any) {
	a.log.Log(context.Background(), level, fmt.Sprintf(format, args...), "status", status)
}

// run serves the database until ctx ends: a session at a time, reconnecting with capped
// exponential backoff, a fresh one per outage, and a pause of at most standbyRetryMax while a
// standby answers. Runs in flight go on until runCtx ends; run waits for them before it returns.
func (a *dbAgent) run(ctx context.Context) {
	// The leader session's share of the budget, also while standing by, and kept through outages:
	// given to runs while the agent reconnects, it would let one owner's backlog take it, and the
	// sessions of the other owners' next runs with it once the agent is back (the attacker review).
	unreserve, _ := a.budget.Reserve(1)
	defer unreserve()
	defer a.closePools()
	defer a.jobs.Wait()
	defer a.tasks.Wait()
	a.logf(agentlog.LevelEssential, agentlog.StatusStarting, "database agent %d starting", a.db.ID)
	retry := a.opt.RetryMin
	var outageSince time.Time
	for ctx.Err() == nil {
		connected := false
		err := a.serve(ctx, func() {
			connected = true
			if !outageSince.IsZero() {
				a.logf(agentlog.LevelEssential, agentlog.StatusStarting, "database reachable again after %s", a.opt.Clock.Now().Sub(outageSince).Round(time.Second))
				a.event(EventReachable)
				outageSince = time.Time{}
			}
			retry = a.opt.RetryMin
		})
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, sqlschema.ErrLostLead) {
			a.setState(StateConnected, "lost the lead: looking at the lead again")
			// Not an outage: this agent was stopped or hung long enough for a standby to take
			// over. Its claims failed, so it fired nothing the new leader owns.
			a.logf(agentlog.LevelEssential, agentlog.StatusWaiting, "lost the lead: another agent took over while this one did not answer; standing by")
			a.event(EventLostLead)
			continue
		}
		a.setState(StateUnavailable, err.Error())
		a.resetPools() // their sessions may be as dead as the leader's
		newOutage := connected || outageSince.IsZero()
		if newOutage {
			if outageSince.IsZero() {
				outageSince = a.opt.Clock.Now()
			}
			retry = a.opt.RetryMin
			a.metrics.Outage()
		}
		pause := retry
		if errors.Is(err, errStandby) || errors.Is(err, pgconn.ErrReadOnlyConnection) {
			// A standby answered: a failover may be under way, whose promotion the agent follows
			// within standbyRetryMax, however long the outage has lasted.
			pause = min(pause, standbyRetryMax)
		}
		if newOutage {
			a.logf(agentlog.LevelError, agentlog.StatusReconnecting, "database unavailable: %v; retrying with backoff up to %s", err, a.opt.RetryMax)
		} else {
			a.logf(agentlog.LevelDebug, agentlog.StatusReconnecting, "still unreachable: %v; next try in %s", err, pause)
		}
		timer := a.opt.Clock.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C():
		}
		retry = min(retry*2, a.opt.RetryMax)
	}
	a.setState(StateStopping, "")
	a.logf(agentlog.LevelEssential, agentlog.StatusStopping, "database agent %d stopping; waiting for %d runs", a.db.ID, a.jobs.InFlight())
	a.jobs.Wait()
	if n := a.jobs.PendingCount(); n > 0 {
		a.logf(agentlog.LevelError, agentlog.StatusStopping, "%d run ends could not be recorded: the database was unreachable; those runs will read as abandoned", n)
	}
}
