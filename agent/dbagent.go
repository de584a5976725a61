package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
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

// pruneEvery is how often, at most, the agent deletes the runs older than the retention setting.
const pruneEvery = time.Hour

// dbAgent serves one database: it holds the leader lock, plans the jobs and fires them.
type dbAgent struct {
	db  Database
	opt Options
	log *slog.Logger

	runCtx context.Context // runs are cancelled when it ends
	runs   sync.WaitGroup  // runs in flight, and their session resets
	slots  chan struct{}   // one per run in flight, MaxRuns at most

	runningMu sync.Mutex
	running   map[int]bool // jobs with a scheduled run in flight

	poolsMu  sync.Mutex
	records  *pgxpool.Pool            // the agent's own sessions: run history and planning
	pools    map[string]*pgxpool.Pool // sessions of each job owner
	sessions sync.Map                 // backend pid -> backend_start of the owner sessions

	pendingMu sync.Mutex
	pending   []pendingFinish // run ends not yet recorded: the database was unreachable

	startupDone atomic.Bool // startup jobs ran in this agent's life

	pruned      time.Time // when old runs were last deleted; the loop's
	foreignRuns bool      // runs of other agents are recorded as running; the loop's
}

// pendingFinish is a run end to record; runID is 0 when the run has no row yet.
type pendingFinish struct {
	run    sqlschema.Run
	runID  int64
	result sqlschema.RunResult
}

func newDBAgent(db Database, opt Options, runCtx context.Context) *dbAgent {
	return &dbAgent{
		db:      db,
		opt:     opt,
		log:     opt.Logger(db.ID, db.LogLevel),
		runCtx:  runCtx,
		slots:   make(chan struct{}, opt.MaxRuns),
		running: map[int]bool{},
		pools:   map[string]*pgxpool.Pool{},
	}
}

func (a *dbAgent) logf(level slog.Level, status, format string, args ...any) {
	a.log.Log(context.Background(), level, fmt.Sprintf(format, args...), "status", status)
}

// run serves the database until ctx ends: a session at a time, reconnecting with capped
// exponential backoff, a fresh one per outage. Runs in flight go on until runCtx ends; run waits
// for them before it returns.
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
				outageSince = time.Time{}
			}
			retry = a.opt.RetryMin
		})
		if ctx.Err() != nil {
			break
		}
		a.resetPools() // their sessions may be as dead as the leader's
		if connected || outageSince.IsZero() {
			if outageSince.IsZero() {
				outageSince = a.opt.Clock.Now()
			}
			retry = a.opt.RetryMin
			a.logf(agentlog.LevelError, statusReconnecting, "database unavailable: %v; retrying with backoff up to %s", err, a.opt.RetryMax)
		} else {
			a.logf(agentlog.LevelDebug, statusReconnecting, "still unreachable: %v; next try in %s", err, retry)
		}
		timer := a.opt.Clock.NewTimer(retry)
		select {
		case <-ctx.Done():
			timer.Stop()
		case <-timer.C():
		}
		retry = min(retry*2, a.opt.RetryMax)
	}
	a.logf(agentlog.LevelEssential, statusStopping, "database agent %d stopping; waiting for %d runs", a.db.ID, len(a.slots))
	a.runs.Wait()
	if n := a.pendingCount(); n > 0 {
		a.logf(agentlog.LevelError, statusStopping, "%d run ends could not be recorded: the database was unreachable; those runs will read as abandoned", n)
	}
}

// serve runs one leader session: connect, take the leader lock, then plan and fire until the
// session fails or ctx ends. onConnected is called once the agent is the active one. On a soft
// stop the leader session stays until the runs have ended, so no other agent takes over while
// they go on.
func (a *dbAgent) serve(ctx context.Context, onConnected func()) error {
	cfg, err := a.connConfig("")
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	session, inRecovery, err := sqlschema.LeaderSession(ctx, conn)
	if err != nil {
		return err
	}
	if inRecovery {
		return errors.New("the server is a standby in recovery; the agent needs the primary (list both hosts: host1,host2)")
	}
	if err := sqlschema.Check(ctx, conn); err != nil {
		return err
	}
	got, err := sqlschema.LeaderTry(ctx, conn)
	if err != nil {
		return err
	}
	if !got {
		a.logf(agentlog.LevelEssential, statusWaiting, "another agent is active on this database; standing by to take over")
		if err := sqlschema.LeaderWait(ctx, conn); err != nil {
			return err
		}
		a.logf(agentlog.LevelEssential, statusStarting, "taking over as the active agent")
	}
	epoch, err := sqlschema.LeaderEpoch(ctx, conn, a.opt.Name)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, "LISTEN pgjobs"); err != nil {
		return fmt.Errorf("listen for changes: %w", err)
	}
	records, err := a.recordsPool()
	if err != nil {
		return err
	}
	a.flushPending(ctx, records)
	if err := a.abandon(ctx, records); err != nil {
		return err
	}
	a.prune(ctx, records)
	onConnected()
	a.logf(agentlog.LevelEssential, statusStarting, "active on %s as session %d", cfg.Database, session)

	listenCtx, stopListening := context.WithCancel(context.Background())
	defer stopListening()
	changes := make(chan struct{}, 1)
	lost := make(chan error, 1)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		for {
			if _, err := conn.WaitForNotification(listenCtx); err != nil {
				lost <- err
				return
			}
			select {
			case changes <- struct{}{}:
			default: // a reload is already due
			}
		}
	}()
	err = a.loop(ctx, records, epoch, changes, lost)
	if ctx.Err() != nil {
		a.runs.Wait() // a soft stop: hold the leader lock until the runs have ended
	}
	stopListening()
	<-listening // the connection is the listener's until it returns
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// loop plans and fires until the leader session is lost or ctx ends.
func (a *dbAgent) loop(ctx context.Context, records *pgxpool.Pool, epoch int64, changes <-chan struct{}, lost <-chan error) error {
	p := newPlanner(a.opt, a.log)
	stored, err := sqlschema.JobLoad(ctx, records)
	if err != nil {
		return err
	}
	now := a.opt.Clock.Now()
	p.load(stored, now)
	if err := a.recordMissed(ctx, records, epoch, p.missed(now)); err != nil {
		return err
	}
	if !a.startupDone.Swap(true) {
		for _, j := range p.startupJobs() {
			a.fire(ctx, j, nil)
		}
	}
	var warmed time.Time            // the fire whose sessions are open
	claimed := map[int]time.Time{}  // fires claimed ahead, by job
	var writePlans <-chan time.Time // when to record the plans changed by fires
	var recheck <-chan time.Time    // when to look again for runs whose session ended
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		now = a.opt.Clock.Now()
		if fires := p.due(now); len(fires) > 0 {
			if err := a.fireClaimed(ctx, records, epoch, fires, claimed); err != nil {
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
			a.logf(agentlog.LevelDebug, statusSleeping, "sleeping until %s", sleepUntil.Format(time.RFC3339Nano))
		} else {
			a.logf(agentlog.LevelDebug, statusSleeping, "no job to fire; sleeping until a change")
		}
		select {
		case <-ctx.Done():
			stopTimer(timer)
			return ctx.Err()
		case err := <-lost:
			stopTimer(timer)
			return fmt.Errorf("the database session ended: %w", err)
		case <-changes:
			stopTimer(timer)
			stored, err := sqlschema.JobLoad(ctx, records)
			if err != nil {
				return err
			}
			p.load(stored, a.opt.Clock.Now())
			a.logf(agentlog.LevelInfo, statusSleeping, "jobs reloaded after a change: %d jobs", len(stored))
		case <-writePlans:
			stopTimer(timer)
			writePlans = nil
			if err := a.recordPlans(ctx, records, p); err != nil {
				return err
			}
			a.flushPending(ctx, records)
			if time.Since(a.pruned) > pruneEvery {
				a.prune(ctx, records)
			}
		case <-recheck:
			stopTimer(timer)
			recheck = nil
			if err := a.abandon(ctx, records); err != nil {
				return err
			}
		case <-wake:
		}
	}
}

// abandonRecheck is how often the agent looks again for ended sessions while runs of other
// agents are still recorded as running.
const abandonRecheck = 2 * time.Second

// abandon marks abandoned the runs whose session has ended, and tells whether runs of other
// agents are still going (their sessions live), to be looked at again.
func (a *dbAgent) abandon(ctx context.Context, records *pgxpool.Pool) error {
	names, err := sqlschema.RunAbandon(ctx, records)
	if err != nil {
		return err
	}
	if len(names) > 0 {
		a.logf(agentlog.LevelEssential, statusStarting, "marked %d runs abandoned (their session ended): %v", len(names), names)
	}
	foreign, err := sqlschema.RunForeignRunning(ctx, records, a.opt.Name)
	if err != nil {
		return err
	}
	a.foreignRuns = foreign > 0
	return nil
}

// claimAhead claims, while the sessions open, the fires of jobs at `at`, so that at the minute
// the runs start with no round trip before them. A claimed fire that never gets a run row (the
// agent died first) is recorded as missed by the next agent.
func (a *dbAgent) claimAhead(ctx context.Context, records *pgxpool.Pool, epoch int64, jobs []*job, at time.Time, claimed map[int]time.Time) error {
	ids := make([]int, len(jobs))
	ats := make([]time.Time, len(jobs))
	for i, j := range jobs {
		ids[i], ats[i] = j.id, at
	}
	got, err := sqlschema.FireClaim(ctx, records, ids, ats, epoch)
	if err != nil {
		return err
	}
	for _, id := range got {
		claimed[id] = at
	}
	return nil
}

// fireClaimed fires the due fires this leader epoch has claimed: ahead, or now. A fire that
// another agent claimed, or any fire once another agent has taken the lead, does not run.
func (a *dbAgent) fireClaimed(ctx context.Context, records *pgxpool.Pool, epoch int64, fires []dueFire, claimed map[int]time.Time) error {
	var ids []int
	var ats []time.Time
	ok := make(map[int]bool, len(fires))
	for _, f := range fires {
		if at, ahead := claimed[f.job.id]; ahead && at.Equal(f.at) {
			ok[f.job.id] = true
		} else {
			ids, ats = append(ids, f.job.id), append(ats, f.at)
		}
		delete(claimed, f.job.id)
	}
	if len(ids) > 0 {
		got, err := sqlschema.FireClaim(ctx, records, ids, ats, epoch)
		if err != nil {
			return err
		}
		for _, id := range got {
			ok[id] = true
		}
	}
	for _, f := range fires {
		if !ok[f.job.id] {
			a.logf(agentlog.LevelInfo, statusFiring, "job %s: the fire of %s was claimed by another agent", f.job.name, f.at.Format(time.RFC3339))
			continue
		}
		at := f.at
		a.fire(ctx, f.job, &at)
	}
	return nil
}

// recordPlans writes the next planned runs that changed.
func (a *dbAgent) recordPlans(ctx context.Context, records *pgxpool.Pool, p *planner) error {
	changed := p.changedPlans()
	if len(changed.ids) == 0 {
		return nil
	}
	return sqlschema.JobPlan(ctx, records, changed.ids, changed.next)
}

// prune deletes the runs older than the run_retention setting.
func (a *dbAgent) prune(ctx context.Context, records *pgxpool.Pool) {
	a.pruned = time.Now()
	if n, err := sqlschema.RunPrune(ctx, records); err != nil {
		a.logf(agentlog.LevelError, statusFiring, "%v", err)
	} else if n > 0 {
		a.logf(agentlog.LevelInfo, statusFiring, "deleted %d runs older than the run_retention setting", n)
	}
}

func stopTimer(t Timer) {
	if t != nil {
		t.Stop()
	}
}

// fire starts a run of a job; scheduled is nil for a startup run. A fire while the job's previous
// run goes on is recorded as skipped; so is one that waits for a free run slot when the agent
// stops.
func (a *dbAgent) fire(stop context.Context, j *job, scheduled *time.Time) {
	a.runningMu.Lock()
	busy := a.running[j.id]
	a.running[j.id] = true
	a.runningMu.Unlock()
	a.runs.Add(1)
	if busy {
		go func() {
			defer a.runs.Done()
			if scheduled != nil {
				a.recordSkipped(j, *scheduled, "the previous run was still going")
			}
		}()
		return
	}
	go func() {
		defer a.runs.Done()
		defer func() {
			a.runningMu.Lock()
			delete(a.running, j.id)
			a.runningMu.Unlock()
		}()
		select {
		case a.slots <- struct{}{}:
		case <-stop.Done():
			if scheduled != nil {
				a.recordSkipped(j, *scheduled, "the agent stopped before a run slot was free")
			}
			return
		}
		defer func() { <-a.slots }()
		a.execute(j, scheduled)
	}()
}

// execute runs a job on a session of its owner and records the run.
func (a *dbAgent) execute(j *job, scheduled *time.Time) {
	records, err := a.recordsPool()
	if err != nil {
		a.logf(agentlog.LevelError, statusFiring, "job %s not run: %v", j.name, err)
		return
	}
	run := sqlschema.Run{JobID: j.id, JobName: j.name, Owner: j.owner, Scheduled: scheduled,
		Agent: a.opt.Name, Started: a.opt.Clock.Now()}
	a.logf(agentlog.LevelInfo, statusFiring, "job %s started: SELECT %s as %s", j.name, j.call, j.owner)
	long := time.NewTimer(runningRowAfter) // real time: bookkeeping, not a schedule
	defer long.Stop()
	var result sqlschema.RunResult
	conn, err := a.acquire(j.owner)
	if err != nil {
		result = a.failure(j, err)
	} else {
		pid := conn.Conn().PgConn().PID()
		run.Session = int(pid)
		if start, ok := a.sessions.Load(pid); ok {
			run.SessionStart = start.(time.Time)
		}
		results := make(chan sqlschema.RunResult, 1)
		go func() { results <- a.runOn(conn, j) }()
		select {
		case result = <-results:
		case <-long.C:
			runID, err := sqlschema.RunStart(a.runCtx, records, run)
			if err != nil {
				a.logf(agentlog.LevelError, statusFiring, "job %s: %v", j.name, err)
			}
			result = <-results
			a.logResult(j, result)
			a.finish(records, run, runID, result)
			return
		}
	}
	a.logResult(j, result)
	<-long.C // let the other runs of this minute start before the bookkeeping
	a.finish(records, run, 0, result)
}

// logResult logs how a run ended: done at level 2, failed or cancelled at level 1.
func (a *dbAgent) logResult(j *job, result sqlschema.RunResult) {
	switch result.Status {
	case "ok":
		a.logf(agentlog.LevelInfo, statusFiring, "job %s done", j.name)
	default:
		a.logf(agentlog.LevelEssential, statusFiring, "job %s %s: %s", j.name, map[string]string{"error": "failed", "cancelled": "cancelled"}[result.Status], result.Message)
	}
}

// finish records how a run ended: the whole run when it has no row yet (runID 0).
func (a *dbAgent) finish(records *pgxpool.Pool, run sqlschema.Run, runID int64, result sqlschema.RunResult) {
	// Record the end even when the agent is stopping: a fresh context, bounded.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if runID == 0 {
		err = sqlschema.RunInsert(ctx, records, run, result)
	} else {
		var recorded bool
		if recorded, err = sqlschema.RunFinish(ctx, records, runID, result); err == nil && !recorded {
			a.logf(agentlog.LevelError, statusFiring, "job %s ended %s, but its run had been marked abandoned meanwhile", run.JobName, result.Status)
		}
	}
	if err != nil {
		a.logf(agentlog.LevelError, statusFiring, "job %s: %v; recording it when the database is back", run.JobName, err)
		a.pendingMu.Lock()
		a.pending = append(a.pending, pendingFinish{run: run, runID: runID, result: result})
		a.pendingMu.Unlock()
	}
}

// runOn runs SELECT <call>, a transaction of its own, on an owner session, then resets the
// session (DISCARD ALL) so that no run sees another's settings, and gives it back.
func (a *dbAgent) runOn(conn *pgxpool.Conn, j *job) sqlschema.RunResult {
	_, err := conn.Exec(a.runCtx, "SELECT "+j.call, pgx.QueryExecModeSimpleProtocol)
	a.runs.Add(1)
	go func(started time.Time) {
		defer a.runs.Done()
		// Later, so that the resets take nothing from the runs starting in the same minute.
		time.Sleep(runningRowAfter - time.Since(started))
		resetCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(resetCtx, "DISCARD ALL", pgx.QueryExecModeSimpleProtocol); err != nil {
			conn.Conn().Close(resetCtx) // the pool drops it
		}
		conn.Release()
	}(time.Now())
	if err != nil {
		return a.failure(j, err)
	}
	return sqlschema.RunResult{Finished: a.opt.Clock.Now(), Status: "ok"}
}

// failure describes a run that failed with err.
func (a *dbAgent) failure(j *job, err error) sqlschema.RunResult {
	result := sqlschema.RunResult{Finished: a.opt.Clock.Now(), Status: "error", Message: err.Error()}
	var pgErr *pgconn.PgError
	var connectErr *pgconn.ConnectError
	switch {
	case a.runCtx.Err() != nil:
		result.Status, result.Message = "cancelled", "cancelled: the agent stopped before the run finished"
		if errors.As(err, &pgErr) {
			result.SQLState = pgErr.Code
		}
	case errors.As(err, &connectErr):
		if errors.As(err, &pgErr) {
			result.SQLState = pgErr.Code
		}
		result.Message = fmt.Sprintf("cannot connect as role %s to run the job: %v; let the agent's OS user authenticate as %s: a pg_hba.conf rule for it, or a ~/.pgpass line for it", j.owner, err, j.owner)
	case errors.As(err, &pgErr):
		result.SQLState, result.Message = pgErr.Code, pgErr.Message
		if pgErr.Detail != "" {
			result.Message += " (" + pgErr.Detail + ")"
		}
	}
	return result
}

// recordSkipped records a fire that did not run.
func (a *dbAgent) recordSkipped(j *job, at time.Time, why string) {
	a.logf(agentlog.LevelInfo, statusFiring, "job %s: fire of %s skipped: %s", j.name, at.Format(time.RFC3339), why)
	records, err := a.recordsPool()
	if err != nil {
		a.logf(agentlog.LevelError, statusFiring, "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sqlschema.RunRecord(ctx, records, j.id, j.name, j.owner, at, "skipped", why, a.opt.Name); err != nil {
		a.logf(agentlog.LevelError, statusFiring, "%v", err)
	}
}

// recordMissed records, once per job and outage, the fires that passed while no agent was
// active, and claims them so that no agent counts them again. The row has the last missed fire
// (the claimed one); its message gives the first and the count.
func (a *dbAgent) recordMissed(ctx context.Context, records *pgxpool.Pool, epoch int64, missed []missedFires) error {
	for _, m := range missed {
		claimed, err := sqlschema.FireClaim(ctx, records, []int{m.job.id}, []time.Time{m.last}, epoch)
		if err != nil {
			return err
		}
		alreadyOurs := m.job.lastFire != nil && m.job.lastFire.Equal(m.last) // claimed ahead by a stopped agent
		if len(claimed) == 0 && !alreadyOurs {
			continue // another agent has them
		}
		msg := fmt.Sprintf("%d fires from %s to %s were missed: no agent was active on the database", m.count, m.first.Format(time.RFC3339), m.last.Format(time.RFC3339))
		if m.count == 1 {
			msg = fmt.Sprintf("the fire of %s was missed: no agent was active on the database", m.first.Format(time.RFC3339))
		}
		a.logf(agentlog.LevelEssential, statusStarting, "job %s: %s", m.job.name, msg)
		if err := sqlschema.RunRecord(ctx, records, m.job.id, m.job.name, m.job.owner, m.last, "missed", msg, a.opt.Name); err != nil {
			return err
		}
	}
	return nil
}

// flushPending records the run ends that could not be recorded before.
func (a *dbAgent) flushPending(ctx context.Context, records *pgxpool.Pool) {
	a.pendingMu.Lock()
	pending := a.pending
	a.pending = nil
	a.pendingMu.Unlock()
	for i, p := range pending {
		var err error
		if p.runID == 0 {
			err = sqlschema.RunInsert(ctx, records, p.run, p.result)
		} else {
			_, err = sqlschema.RunFinish(ctx, records, p.runID, p.result)
		}
		if err != nil {
			a.pendingMu.Lock()
			a.pending = append(a.pending, pending[i:]...)
			a.pendingMu.Unlock()
			return
		}
	}
}

func (a *dbAgent) pendingCount() int {
	a.pendingMu.Lock()
	defer a.pendingMu.Unlock()
	return len(a.pending)
}

// connConfig returns the connection settings of the agent's sessions, as user when not "": the
// DSN is read again for that user, so that its own password (PGPASSWORD, ~/.pgpass) is used.
// TCP keepalives let the server end a dead agent's session, and its lock, within seconds.
func (a *dbAgent) connConfig(user string) (*pgx.ConnConfig, error) {
	dsn := a.db.DSN
	if user != "" {
		dsn += " user='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(user) + "'"
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("database %d: %w", a.db.ID, err)
	}
	cfg.RuntimeParams["application_name"] = applicationName(a.db.ID)
	cfg.RuntimeParams["idle_session_timeout"] = "0"
	// A run whose agent died ends within a second instead of running on unowned.
	cfg.RuntimeParams["client_connection_check_interval"] = "1000"
	cfg.RuntimeParams["tcp_keepalives_idle"] = "5"
	cfg.RuntimeParams["tcp_keepalives_interval"] = "1"
	cfg.RuntimeParams["tcp_keepalives_count"] = "3"
	cfg.DialFunc = (&net.Dialer{KeepAlive: 5 * time.Second, Timeout: 10 * time.Second}).DialContext
	return cfg, nil
}

// recordsPool returns the pool of the agent's own sessions.
func (a *dbAgent) recordsPool() (*pgxpool.Pool, error) {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		return a.records, nil
	}
	pool, err := a.newPool("", 8)
	if err != nil {
		return nil, err
	}
	a.records = pool
	return pool, nil
}

// acquire takes a session authenticated as a job owner from its pool.
func (a *dbAgent) acquire(owner string) (*pgxpool.Conn, error) {
	pool, err := a.ownerPool(owner)
	if err != nil {
		return nil, err
	}
	return pool.Acquire(a.runCtx)
}

// ownerPool returns the pool of sessions authenticated as a job owner.
func (a *dbAgent) ownerPool(owner string) (*pgxpool.Pool, error) {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if pool, ok := a.pools[owner]; ok {
		return pool, nil
	}
	pool, err := a.newPool(owner, a.opt.MaxRuns)
	if err != nil {
		return nil, err
	}
	a.pools[owner] = pool
	return pool, nil
}

func (a *dbAgent) newPool(user string, size int) (*pgxpool.Pool, error) {
	cfg, err := a.connConfig(user)
	if err != nil {
		return nil, err
	}
	poolCfg, err := pgxpool.ParseConfig("")
	if err != nil {
		return nil, err
	}
	poolCfg.ConnConfig = cfg
	poolCfg.MaxConns = int32(size)
	if user != "" {
		poolCfg.ConnConfig.RuntimeParams["application_name"] = applicationName(a.db.ID) + " job"
		// No ping before a run: it would delay the run by a round trip. A dead session fails the
		// run, which records why, and the pool drops it; outages reset the pools anyway.
		poolCfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
		// Each session's identity, read once when it opens, names the session of its runs.
		poolCfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
			pid, start, err := sqlschema.SessionIdentity(ctx, c)
			if err == nil {
				a.sessions.Store(uint32(pid), start)
			}
			return err
		}
		poolCfg.BeforeClose = func(c *pgx.Conn) { a.sessions.Delete(c.PgConn().PID()) }
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), poolCfg)
	if err != nil {
		return nil, fmt.Errorf("database %d: sessions as %s: %w", a.db.ID, cfg.User, err)
	}
	return pool, nil
}

// warm opens, ahead of a fire, the sessions its runs will need: as many per owner as the owner
// has jobs due then (up to MaxRuns), so that no run waits for a connection at its minute.
// Opening a session sends no statement but the one reading its identity.
func (a *dbAgent) warm(jobs []*job) {
	need := map[string]int{}
	for _, j := range jobs {
		need[j.owner] = min(need[j.owner]+1, a.opt.MaxRuns)
	}
	for owner, n := range need {
		pool, err := a.ownerPool(owner)
		if err != nil {
			continue // the run reports it
		}
		// Hold all n at once, else the pool hands the same session out again.
		go func() {
			ctx, cancel := context.WithTimeout(a.runCtx, warmLead)
			defer cancel()
			conns := make(chan *pgxpool.Conn, n)
			var opening sync.WaitGroup
			for range n {
				opening.Add(1)
				go func() {
					defer opening.Done()
					if c, err := pool.Acquire(ctx); err == nil {
						conns <- c
					}
				}()
			}
			opening.Wait()
			close(conns)
			for c := range conns {
				c.Release()
			}
		}()
	}
}

// resetPools closes every idle session of the pools; new ones are opened on demand.
func (a *dbAgent) resetPools() {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		a.records.Reset()
	}
	for _, p := range a.pools {
		p.Reset()
	}
}

func (a *dbAgent) closePools() {
	a.poolsMu.Lock()
	defer a.poolsMu.Unlock()
	if a.records != nil {
		a.records.Close()
	}
	for _, p := range a.pools {
		p.Close()
	}
}
