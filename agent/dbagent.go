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
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// The states a database agent logs its events in.
const (
	statusStarting     = "starting"
	statusWaiting      = "waiting" // another agent is the active one
	statusSleeping     = "sleeping"
	statusFiring       = "firing"
	statusReconnecting = "reconnecting"
	statusStopping     = "stopping"
)

// warmLead is how long before a fire the agent opens the sessions it needs.
const warmLead = 2 * time.Second

// runningRowAfter is how long a run goes on before its "running" row is written. A shorter run is
// recorded once, when it ends, in one statement: at a busy minute the bookkeeping then takes
// nothing from the runs' start. The fire itself is claimed (pgj_fire_) before the run starts, so
// a successor never runs it again.
const runningRowAfter = 200 * time.Millisecond

// standbyRetryMax is the longest pause between tries while the server that answers is a standby
// in recovery (pointed at alone, or the only one of a host list up, whose read-write server is
// gone): the agent follows a promotion within it, plus a connection, whatever RetryMax is.
const standbyRetryMax = 5 * time.Second

// reloadEvery is how often, at most, the agent reloads the jobs when notified of changes.
const reloadEvery = time.Second

// pruneEvery is how often, at most, the agent deletes the runs older than the retention setting.
const pruneEvery = time.Hour

// dbAgent serves one database: it holds the leader lease, plans the jobs and fires them.
type dbAgent struct {
	db  Database
	opt Options
	log *slog.Logger

	runCtx context.Context // runs are cancelled when it ends
	runs   sync.WaitGroup  // runs in flight, and their session resets

	runningMu sync.Mutex
	running   map[int]*inFlight // jobs with a run waiting for a session or going on

	budget  *sessions.Budget // the sessions of the database's server
	owners  *sessions.Pool   // the sessions of the job owners, MaxRuns lent at most
	poolsMu sync.Mutex
	records *pgxpool.Pool // the agent's own sessions: run history and planning
	// unreserveRecords gives the records' sessions back to the budget.
	unreserveRecords func()

	pendingMu sync.Mutex
	pending   []sqlschema.RunEnd // run ends not yet recorded: the database was unreachable
	recorder  recorder

	startupDone atomic.Bool // startup jobs ran in this agent's life
	anchor      time.Time   // the instant interval schedules count from: the agent's start, or its takeover

	pruned      time.Time    // when old runs were last deleted; the upkeep's
	foreignRuns bool         // runs of other agents are recorded as running; the loop's
	foreignBusy map[int]bool // the jobs of those runs; the loop's
}

func newDBAgent(db Database, opt Options, runCtx context.Context, budget *sessions.Budget) *dbAgent {
	a := &dbAgent{
		db:      db,
		opt:     opt,
		log:     opt.Logger(db.ID, db.LogLevel),
		runCtx:  runCtx,
		running: map[int]*inFlight{},
		budget:  budget,
		anchor:  opt.Start,
	}
	a.owners = budget.NewPool(runCtx, opt.MaxRuns, a.openOwnerSession)
	return a
}

func (a *dbAgent) logf(level slog.Level, status, format string, args ...any) {
	a.log.Log(context.Background(), level, fmt.Sprintf(format, args...), "status", status)
}

// run serves the database until ctx ends: a session at a time, reconnecting with capped
// exponential backoff, a fresh one per outage, and a pause of at most standbyRetryMax while a
// standby answers. Runs in flight go on until runCtx ends; run waits for them before it returns.
func (a *dbAgent) run(ctx context.Context) {
	defer a.closePools()
	defer a.runs.Wait()
	a.logf(agentlog.LevelEssential, statusStarting, "database agent %d starting", a.db.ID)
	retry := a.opt.RetryMin
	var outageSince time.Time
	for ctx.Err() == nil {
		connected := false
		err := a.serve(ctx, func() {
			connected = true
			if !outageSince.IsZero() {
				a.logf(agentlog.LevelEssential, statusStarting, "database reachable again after %s", a.opt.Clock.Now().Sub(outageSince).Round(time.Second))
				a.event(EventReachable)
				outageSince = time.Time{}
			}
			retry = a.opt.RetryMin
		})
		if ctx.Err() != nil {
			break
		}
		if errors.Is(err, sqlschema.ErrLostLead) {
			// Not an outage: this agent was stopped or hung long enough for a standby to take
			// over. Its claims failed, so it fired nothing the new leader owns.
			a.logf(agentlog.LevelEssential, statusWaiting, "lost the lead: another agent took over while this one did not answer; standing by")
			a.event(EventLostLead)
			continue
		}
		a.resetPools() // their sessions may be as dead as the leader's
		newOutage := connected || outageSince.IsZero()
		if newOutage {
			if outageSince.IsZero() {
				outageSince = a.opt.Clock.Now()
			}
			retry = a.opt.RetryMin
		}
		pause := retry
		if errors.Is(err, errStandby) || errors.Is(err, pgconn.ErrReadOnlyConnection) {
			// A standby answered: a failover may be under way, whose promotion the agent follows
			// within standbyRetryMax, however long the outage has lasted.
			pause = min(pause, standbyRetryMax)
		}
		if newOutage {
			a.logf(agentlog.LevelError, statusReconnecting, "database unavailable: %v; retrying with backoff up to %s", err, a.opt.RetryMax)
		} else {
			a.logf(agentlog.LevelDebug, statusReconnecting, "still unreachable: %v; next try in %s", err, pause)
		}
		timer := a.opt.Clock.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C():
		}
		retry = min(retry*2, a.opt.RetryMax)
	}
	a.logf(agentlog.LevelEssential, statusStopping, "database agent %d stopping; waiting for %d runs", a.db.ID, a.inFlightCount())
	a.runs.Wait()
	if n := a.pendingCount(); n > 0 {
		a.logf(agentlog.LevelError, statusStopping, "%d run ends could not be recorded: the database was unreachable; those runs will read as abandoned", n)
	}
}

// loop plans and fires until the leader session is lost, another agent takes the lead, or ctx
// ends.
func (a *dbAgent) loop(ctx context.Context, records *pgxpool.Pool, t term) error {
	t.progress.Store(time.Now().UnixNano())
	epoch := t.epoch
	p := newPlanner(a.opt, a.log, t.anchor, t.lateLimit)
	stored, err := sqlschema.JobLoad(ctx, records)
	if err != nil {
		return err
	}
	now := a.opt.Clock.Now()
	p.load(stored, now)
	if err := a.recordMissed(ctx, records, epoch, p.missed(now)); err != nil {
		return err
	}
	if t.runStartup {
		for _, j := range p.startupJobs() {
			run := *j // a copy: a reload changes the planner's job while the run goes on
			a.fire(t.stop, &run, nil)
		}
	}
	// Any role may NOTIFY pgjobs: the reloads the notifications ask for are coalesced, at most
	// one per reloadEvery (real time), so that a flood of them costs the agent and the database
	// one job load a second and delays no fire by more than that load.
	reloaded := time.Now()
	var reloadDue <-chan time.Time
	reload := func() error {
		reloaded = time.Now()
		stored, err := sqlschema.JobLoad(ctx, records)
		if err != nil {
			return err
		}
		p.load(stored, a.opt.Clock.Now())
		a.logf(agentlog.LevelInfo, statusSleeping, "jobs reloaded after a change: %d jobs", len(stored))
		if a.opt.OnReload != nil {
			a.opt.OnReload(a.db.ID)
		}
		return nil
	}
	var sleepLogged time.Time // the wake-up last logged: a ping or a change that moves none logs none
	idleLogged := false
	var warmed time.Time            // the fire whose sessions are open
	claimed := map[int]claim{}      // fires claimed ahead, by job
	var writePlans <-chan time.Time // when to record the plans changed by fires
	var recheck <-chan time.Time    // when to look again for runs whose session ended
	for {
		t.progress.Store(time.Now().UnixNano())
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		now = a.opt.Clock.Now()
		if fires := p.due(now); len(fires) > 0 {
			if err := a.fireClaimed(ctx, records, t, inTurns(fires), claimed); err != nil {
				return err
			}
			if writePlans == nil {
				writePlans = time.After(runningRowAfter) // after the runs have started
			}
		} else if writePlans == nil {
			if err := a.recordPlans(ctx, records, p); err != nil {
				return err
			}
		}
		if a.foreignRuns && recheck == nil {
			recheck = time.After(abandonRecheck)
		}
		var wake <-chan time.Time
		var timer Timer
		if next, ok := p.earliest(); ok {
			sleepUntil := next
			if warmAt := next.Add(-warmLead); !next.Equal(warmed) && warmAt.After(a.opt.Clock.Now()) {
				sleepUntil = warmAt // wake early to open the sessions the fire needs
			} else if !next.Equal(warmed) {
				jobs := p.dueAt(next)
				a.warm(jobs)
				if err := a.claimAhead(ctx, records, epoch, jobs, next, claimed); err != nil {
					return err
				}
				warmed = next
			}
			timer = a.opt.Clock.NewTimer(sleepUntil.Sub(a.opt.Clock.Now()))
			wake = timer.C()
			if !sleepUntil.Equal(sleepLogged) {
				a.logf(agentlog.LevelDebug, statusSleeping, "sleeping until %s", sleepUntil.Format(time.RFC3339Nano))
				sleepLogged = sleepUntil
			}
		} else if !sleepLogged.IsZero() || !idleLogged {
			a.logf(agentlog.LevelDebug, statusSleeping, "no job to fire; sleeping until a change")
			a.event(EventIdle)
			sleepLogged, idleLogged = time.Time{}, true
		}
		t.progress.Store(0)
		select {
		case <-ctx.Done():
			t.woke(timer)
			return context.Cause(ctx)
		case <-t.changes:
			t.woke(timer)
			if wait := reloadEvery - time.Since(reloaded); wait > 0 {
				if reloadDue == nil {
					reloadDue = time.After(wait) // changes of the meantime are read together then
				}
				continue
			}
			if err := reload(); err != nil {
				return err
			}
		case <-reloadDue:
			t.woke(timer)
			reloadDue = nil
			if err := reload(); err != nil {
				return err
			}
		case <-writePlans:
			t.woke(timer)
			writePlans = nil
			if err := a.recordPlans(ctx, records, p); err != nil {
				return err
			}
			select {
			case t.upkeepDue <- struct{}{}:
			default: // due already
			}
		case <-recheck:
			t.woke(timer)
			recheck = nil
			if err := a.abandon(ctx, records); err != nil {
				return err
			}
		case <-wake:
		}
	}
}

// recordPlans writes the next planned runs that changed.
func (a *dbAgent) recordPlans(ctx context.Context, records *pgxpool.Pool, p *planner) error {
	changed := p.changedPlans()
	if len(changed.ids) == 0 {
		return nil
	}
	return sqlschema.JobPlan(ctx, records, changed.ids, changed.next)
}

func stopTimer(t Timer) {
	if t != nil {
		t.Stop()
	}
}
