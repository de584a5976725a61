package agent

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/agent/jobs"
	"github.com/pgjobs/pgjobs/agent/task"
	"github.com/pgjobs/pgjobs/sqlschema"
	"golang.org/x/sync/errgroup"
)

// watchAfter is how long the loop may be busy before the leader looks for sessions of other roles
// queued for strong locks on pgjobs' tables, which make every statement of the agent wait.
const watchAfter = 2 * time.Second

// errStandby is serve's error on a server in recovery.
var errStandby = errors.New("the server is a standby in recovery; the agent needs the primary (list both hosts: host1,host2)")

// serve runs one leader session: connect, take the leader lease, then plan and fire until the
// session fails or ctx ends. onConnected is called once the agent is the active one. On a soft
// stop the leader session stays until the runs have ended, so no other agent takes over while
// they go on.
func (a *dbAgent) serve(ctx context.Context, onConnected func()) error {
	cfg, err := a.connConfig("")
	if err != nil {
		return err
	}
	// A wait for notifications that times out (a standby's pause) leaves the session as it was,
	// rather than sending a cancel request that could hit its next statement.
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: pc.Conn()}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	server, err := sqlschema.LeaderSession(ctx, conn)
	if err != nil {
		return err
	}
	a.setState(StateConnected, "")
	a.budget.Learn(server.Available)
	if server.InRecovery {
		return errStandby
	}
	if err := sqlschema.Check(ctx, conn); err != nil {
		return err
	}
	epoch, previous, err := a.lead(ctx, conn)
	if err != nil {
		return err
	}
	start := a.startTerm(previous)
	if start.lateLimit, err = sqlschema.SettingLateLimit(ctx, conn); err != nil {
		return err
	}
	defer func() { a.release(conn, epoch) }() // the term's last epoch: a restart of the services renews it
	if _, err := conn.Exec(ctx, "UNLISTEN pgjobs_leader; LISTEN pgjobs; LISTEN pgjobs_ping; LISTEN pgjobs_task; LISTEN pgjobs_run"); err != nil {
		return fmt.Errorf("listen for changes: %w", err)
	}
	records, err := a.recordsPool()
	if err != nil {
		return err
	}
	a.jobs.FlushPending(ctx, records)
	if err := a.jobs.Abandon(ctx, records); err != nil {
		return err
	}
	a.prune(ctx, records)
	onConnected()
	a.logf(agentlog.LevelEssential, agentlog.StatusStarting, "active on %s as session %d", cfg.Database, server.PID)
	a.event(EventActive)

	t := term{epoch: epoch, termStart: start, stop: ctx, progress: &atomic.Int64{}, taskProgress: &atomic.Int64{}}
	var restarted time.Time // the services' last restart
	for {
		err := a.runServices(ctx, conn, records, t)
		// A statement of a service waited past lock_timeout behind another session (a DBA's
		// maintenance, or sessions the watch ended that took long to exit), or was ended to break a
		// deadlock: the services start again in this term, keeping the lead, rather than giving it
		// to a standby, which would count as a start (startup jobs again, interval schedules counted
		// anew) for a lock that passes. Not twice within restartWithin: locks that do not pass end
		// the term as any failure does, so that a leader that fires nothing does not keep the lead
		// by restarting.
		if !lockTimedOut(err) || (!restarted.IsZero() && time.Since(restarted) < restartWithin) {
			return err
		}
		a.logf(agentlog.LevelError, agentlog.StatusWaiting, "warning: %v; the agent keeps the lead and starts its services again", err)
		// With a new epoch, as after a reconnect: what the services claimed and left unstarted is
		// reset, and nothing of the old epoch is written any more.
		renewed, err := a.renew(ctx, conn, epoch)
		if err != nil {
			return err
		}
		epoch, restarted = renewed, time.Now()
		a.event(EventServicesRestarted)
		t.epoch, t.runStartup, t.resumes = epoch, false, true
	}
}

// restartWithin is how long after a restart of a term's services a second lock timeout ends the
// term instead.
const restartWithin = time.Minute

// renew takes the lease this session holds with epoch again, with a new epoch, unless another
// agent took it meanwhile (ErrLostLead).
func (a *dbAgent) renew(ctx context.Context, conn *pgx.Conn, epoch int64) (int64, error) {
	lease, err := sqlschema.LeaderLook(ctx, conn, false)
	if err != nil {
		return 0, err
	}
	if lease.Epoch != epoch {
		return 0, sqlschema.ErrLostLead
	}
	renewed, _, ok, err := sqlschema.LeaderTake(ctx, conn, a.opt.Name, lease, zoneName(a.opt.Location))
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, sqlschema.ErrLostLead
	}
	return renewed, nil
}

// errStopping ends a term's services when the agent stops softly, once the runs have ended.
var errStopping = errors.New("the agent is stopping")

// runServices runs the term's services in one group until one fails, the session is lost, or a soft
// stop (ctx) has drained the runs: the wake-up dispatcher (the one listener on the leader
// session), the answers to the standbys, the jobs service and the upkeep of the run history. On a
// soft stop the leader session and its lease stay until the runs have ended, answering the
// standbys meanwhile, so that none takes over and starts these jobs again while they go on.
func (a *dbAgent) runServices(ctx context.Context, conn *pgx.Conn, records *pgxpool.Pool, t term) error {
	wakeUps := newDispatcher(conn)
	t.changes, t.pings = wakeUps.topic("pgjobs"), wakeUps.topic("pgjobs_ping")
	taskWake := wakeUps.topic("pgjobs_task")
	requests := wakeUps.topic("pgjobs_run")
	upkeepDue, reloaded := make(chan struct{}, 1), make(chan struct{}, 1)
	services, servicesCtx := errgroup.WithContext(context.Background())
	services.Go(func() error { return wakeUps.listen(servicesCtx) })
	services.Go(func() error { return a.answer(servicesCtx, records, t) })
	services.Go(func() error { return a.upkeep(servicesCtx, records, upkeepDue) })
	services.Go(func() error { return a.callViews(servicesCtx, records, reloaded) })
	tasksDrained := make(chan struct{})
	services.Go(func() error {
		defer close(tasksDrained)
		tasksCtx, stopTasks := context.WithCancelCause(servicesCtx)
		defer stopTasks(nil)
		defer context.AfterFunc(ctx, func() { stopTasks(context.Cause(ctx)) })()
		// On a soft stop it returns once its runs have ended and their ends are written.
		return a.tasks.Run(tasksCtx, task.Term{Epoch: t.epoch, Records: records, Wake: taskWake, UpkeepDue: upkeepDue, Stopping: ctx, Progress: t.taskProgress})
	})
	services.Go(func() error {
		jobsCtx, stopJobs := context.WithCancelCause(servicesCtx)
		defer stopJobs(nil)
		defer context.AfterFunc(ctx, func() { stopJobs(context.Cause(ctx)) })()
		err := a.jobs.Run(jobsCtx, jobs.Term{Epoch: t.epoch, Records: records, Stop: t.stop, Changes: t.changes, Requests: requests, UpkeepDue: upkeepDue, Reloaded: reloaded,
			Progress: t.progress, RunStartup: t.runStartup, Anchor: t.anchor, LateLimit: t.lateLimit, Resumes: t.resumes})
		if ctx.Err() != nil {
			t.progress.Store(0) // waiting for the runs: the answers go on
			a.jobs.Wait()
			<-tasksDrained
			return errStopping
		}
		return err
	})
	err := services.Wait() // the connection is the listener's until then
	if ctx.Err() != nil {
		return nil
	}
	if err != nil && !errors.Is(err, sqlschema.ErrLostLead) {
		// The session may have been ended by an agent that took the lead from this one.
		if lease, lookErr := sqlschema.LeaderLook(ctx, records, false); lookErr == nil && lease.Epoch != t.epoch {
			err = fmt.Errorf("%w: %v", sqlschema.ErrLostLead, err)
		}
	}
	return err
}

// term is what a leadership term gives its services: its epoch, the wake-ups of the leader
// session by topic, and the jobs loop's progress, which the answers to the standbys report on.
type term struct {
	termStart
	epoch    int64
	stop     context.Context // the agent's: it ends on a stop, when runs waiting for a session give up
	changes  <-chan struct{} // pgjobs: the jobs changed
	pings    <-chan struct{} // pgjobs_ping: a standby asks whether the leader lives
	progress *atomic.Int64   // when the loop left its wait (Unix ns), 0 while it waits
	// taskProgress is the same of the task service: a statement of it that waits for a lock wakes
	// the watch for intruders too, but it does not decide the answers to the standbys.
	taskProgress *atomic.Int64
}

// termStart is what a term starts with: whether it is a start for the database (startup jobs run),
// the instant interval schedules count from, and the late_limit setting.
type termStart struct {
	runStartup bool
	resumes    bool // it follows a term of this agent, with no other agent between
	anchor     time.Time
	lateLimit  time.Duration
}

// startTerm decides, once this agent leads, how its term starts. Taking the lead from another
// agent is a start for the database: startup jobs run, and interval schedules count from now, with
// no missed fires for the intervals of the agent replaced. An agent's first term on a database no
// agent led counts from the agent's start; its later terms after a lost session, with no other
// agent in between, go on as before.
func (a *dbAgent) startTerm(previous *string) termStart {
	takeover := previous != nil && *previous != a.opt.Name
	if takeover {
		a.anchor = a.opt.Clock.Now()
	}
	start := termStart{runStartup: takeover || !a.startupDone.Load(), anchor: a.anchor, resumes: previous != nil && !takeover}
	if start.runStartup {
		a.startupDone.Store(true)
	}
	return start
}

// busyFor returns how long the loop has been away from its wait; 0 while it waits.
func (t term) busyFor() time.Duration { return busySince(t.progress) }

// busyFor returns how long a service has been away from its wait, by its progress; 0 while it waits.
func busySince(progress *atomic.Int64) time.Duration {
	since := progress.Load()
	if since == 0 {
		return 0
	}
	return time.Since(time.Unix(0, since))
}

// answer serves the standbys for the term, until ctx ends or another agent takes the lease
// (ErrLostLead): it answers their pings, at most once per wakeEvery however many any role sends,
// while the loop makes progress (it waits, or has been busy for less than LeaderBusyLimit), and
// ends the sessions of other roles queued for strong locks on pgjobs' tables when the loop has been
// busy for watchAfter, warning of prepared transactions that hold locks on them (at the start of
// the term too). A leader stopped as a whole (SIGSTOP,
// a paused VM) answers nothing, and is replaced after the standby's LeaderTimeout.
func (a *dbAgent) answer(ctx context.Context, records *pgxpool.Pool, t term) error {
	tick := time.NewTicker(watchAfter / 2)
	defer tick.Stop()
	var answered, watched time.Time
	warned := map[string]bool{}
	a.warnPreparedLocks(ctx, records, warned)
	var answerDue <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.pings:
			if wait := wakeEvery - time.Since(answered); wait > 0 {
				if answerDue == nil {
					answerDue = time.After(wait)
				}
				continue
			}
		case <-answerDue:
			answerDue = nil
		case <-tick.C:
			if busy := max(t.busyFor(), busySince(t.taskProgress)); busy >= watchAfter && time.Since(watched) >= watchAfter {
				watched = time.Now()
				if err := a.endIntrudersOn(ctx, records); err != nil && ctx.Err() == nil {
					a.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
				}
				a.warnPreparedLocks(ctx, records, warned)
			}
			continue
		}
		if busy := t.busyFor(); busy >= a.opt.LeaderBusyLimit {
			a.logf(agentlog.LevelError, agentlog.StatusFiring, "warning: the agent has been busy for %s without returning to its wait: not answering the standbys, which take over", busy.Round(time.Second))
			continue
		}
		answered = time.Now()
		err := sqlschema.LeaderAnswer(ctx, records, t.epoch)
		if errors.Is(err, sqlschema.ErrLostLead) {
			return err
		}
		if err != nil && ctx.Err() == nil {
			a.logf(agentlog.LevelDebug, agentlog.StatusSleeping, "could not answer a standby: %v", err)
		}
	}
}

// warnPreparedLocks logs, once per term and transaction, the prepared transactions that hold
// locks on pgjobs' tables: no session end releases them, and they block schema upgrades.
func (a *dbAgent) warnPreparedLocks(ctx context.Context, q sqlschema.DB, warned map[string]bool) {
	found, err := sqlschema.LeaderPreparedLocks(ctx, q)
	if err != nil {
		a.logf(agentlog.LevelError, agentlog.StatusStarting, "%v", err)
		return
	}
	for _, p := range found {
		if warned[p.GID+"\x00"+p.Table] {
			continue
		}
		warned[p.GID+"\x00"+p.Table] = true
		a.logf(agentlog.LevelError, agentlog.StatusStarting, "warning: the prepared transaction %q of role %s holds a lock on pgjobs.%s, which blocks schema upgrades: a superuser ends it with ROLLBACK PREPARED", p.GID, p.Owner, p.Table)
		a.event(EventPreparedLock)
	}
}

// release gives the lease of epoch up, if the session still holds it, so that a standby takes
// over at once rather than when it finds the session gone.
func (a *dbAgent) release(conn *pgx.Conn, epoch int64) {
	if conn.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	if _, err := sqlschema.LeaderRelease(ctx, conn, epoch); err != nil {
		a.logf(agentlog.LevelDebug, agentlog.StatusStopping, "could not give the lead up: %v; a standby takes over when the session ends", err)
	}
}

// endIntrudersOn is endIntruders on a session of the agent's pool.
func (a *dbAgent) endIntrudersOn(ctx context.Context, records *pgxpool.Pool) error {
	conn, err := records.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("end the sessions of other roles locking the agent's tables: %w", err)
	}
	defer conn.Release()
	return a.endIntruders(ctx, conn.Conn())
}
