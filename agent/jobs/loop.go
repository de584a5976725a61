package jobs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/internal/clock"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// warmLead is how long before a fire the agent opens the sessions it needs.
const warmLead = 2 * time.Second

// runningRowAfter is how long a run goes on before its "running" row is written. A shorter run is
// recorded once, when it ends, in one statement: at a busy minute the bookkeeping then takes
// nothing from the runs' start. The fire itself is claimed (pgj_fire_) before the run starts, so
// a successor never runs it again.
const runningRowAfter = 200 * time.Millisecond

// bookkeepingWaitMax is how long, at most, the records of the runs that ended and the plans wait
// for the runs still waiting for a session: they take no server time from them meanwhile.
const bookkeepingWaitMax = 2 * time.Second

// runsStarted waits until no run waits for a session of the server's budget, at most
// bookkeepingWaitMax, or the agent stops.
func (s *Service) runsStarted() {
	limit := time.NewTimer(bookkeepingWaitMax) // real time: bookkeeping, not a schedule
	defer limit.Stop()
	select {
	case <-s.cfg.Budget.Quiet():
	case <-limit.C:
	case <-s.runCtx.Done():
	}
}

// afterRunsStarted returns a channel closed runningRowAfter from now, once runsStarted returns.
func (s *Service) afterRunsStarted() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-time.After(runningRowAfter): // real time: bookkeeping, not a schedule
			s.runsStarted()
		case <-s.runCtx.Done():
		}
	}()
	return done
}

// reloadEvery is how often, at most, the agent reloads the jobs when notified of changes.
const reloadEvery = time.Second

// Run plans and fires the jobs for a term, until the leader session is lost, another agent takes
// the lead, or ctx ends. The runs it starts go on after it returns; Wait waits for them.
func (s *Service) Run(ctx context.Context, t Term) error {
	records := t.Records
	t.Progress.Store(time.Now().UnixNano())
	epoch := t.Epoch
	p := newPlanner(s.cfg.Location, s.cfg.Log, t.Anchor, t.LateLimit)
	stored, err := sqlschema.JobLoad(ctx, records)
	if err != nil {
		return err
	}
	now := s.cfg.Clock.Now()
	p.load(stored, now)
	// A job dropped or paused between two terms sent a notification no session listened for.
	s.endWaitsOfGone(p)
	if err := s.recordMissed(ctx, records, epoch, p.missed(now, s.inFlight)); err != nil {
		return err
	}
	claimed := s.claimed // fires claimed ahead, by job
	if t.Resumes {
		p.resume(claimed, now)
	} else {
		clear(claimed) // another agent led between: they are no longer this agent's to fire
	}
	if t.RunStartup {
		for _, j := range p.startupJobs() {
			run := *j // a copy: a reload changes the planner's job while the run goes on
			s.fire(t.Stop, &run, nil)
		}
	}
	// Any role may NOTIFY pgjobs: the reloads the notifications ask for are coalesced, at most
	// one per reloadEvery (real time), so that a flood of them costs the agent and the database
	// one job load a second and delays no fire by more than that load.
	reloaded := time.Now()
	var reloadDue <-chan time.Time
	reload := func() error {
		reloaded, reloadDue = time.Now(), nil // a reload due later is this one
		stored, err := sqlschema.JobLoad(ctx, records)
		if err != nil {
			return err
		}
		p.load(stored, s.cfg.Clock.Now())
		s.endWaitsOfGone(p)
		s.logf(agentlog.LevelInfo, agentlog.StatusSleeping, "jobs reloaded after a change: %d jobs", len(stored))
		select {
		case t.Reloaded <- struct{}{}:
		default: // nil, or told already
		}
		if s.cfg.OnReload != nil {
			s.cfg.OnReload()
		}
		return nil
	}
	// Requests to run a job now made while no agent led run now. Any role may NOTIFY pgjobs_run:
	// the takes are coalesced like the reloads, at most one per requestEvery.
	if err := s.answerOrphans(ctx, records, t); err != nil {
		return err
	}
	requested := time.Now()
	var requestDue <-chan time.Time
	takeRequests := func() error {
		requested, requestDue = time.Now(), nil
		more, err := s.takeRequests(ctx, records, t, p)
		if more {
			requestDue = time.After(requestEvery)
		}
		return err
	}
	if err := takeRequests(); err != nil {
		return err
	}
	// A change reloads the jobs, or makes a reload due, and the requests are taken after it.
	changed := func() error {
		if wait := reloadEvery - time.Since(reloaded); wait > 0 {
			if reloadDue == nil {
				reloadDue = time.After(wait) // changes of the meantime are read together then
			}
			return nil
		}
		if err := reload(); err != nil {
			return err
		}
		return takeRequests() // those of the jobs just loaded
	}
	// A request waits for a change notified before it (an owner who sets a job's call and runs it
	// at once): its run takes the job as it is after the reload, not as it was.
	requestedNow := func() error {
		select {
		case <-t.Changes:
			return changed()
		default:
		}
		if reloadDue != nil {
			return nil // the reload due takes the requests
		}
		return takeRequests()
	}
	var sleepLogged time.Time // the wake-up last logged: a ping or a change that moves none logs none
	idleLogged := false
	var warmed time.Time           // the fire whose sessions are open
	var writePlans <-chan struct{} // when to record the plans changed by fires
	var recheck <-chan time.Time   // when to look again for runs whose session ended
	for {
		t.Progress.Store(time.Now().UnixNano())
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		now = s.cfg.Clock.Now()
		if fires := p.due(now); len(fires) > 0 {
			if err := s.fireClaimed(ctx, records, t, inTurns(fires), claimed); err != nil {
				return err
			}
			if writePlans == nil {
				writePlans = s.afterRunsStarted() // after the runs have started
			}
		} else if writePlans == nil {
			if err := s.recordPlans(ctx, records, p); err != nil {
				return err
			}
		}
		if len(s.foreignBusy) > 0 && recheck == nil {
			recheck = time.After(abandonRecheck)
		}
		var wake <-chan time.Time
		var timer clock.Timer
		if next, ok := p.earliest(); ok {
			sleepUntil := next
			if warmAt := next.Add(-warmLead); !next.Equal(warmed) && warmAt.After(s.cfg.Clock.Now()) {
				sleepUntil = warmAt // wake early to open the sessions the fire needs
			} else if !next.Equal(warmed) {
				jobs := p.dueAt(next)
				s.warm(jobs)
				if err := s.claimAhead(ctx, records, epoch, jobs, next, claimed); err != nil {
					return err
				}
				warmed = next
			}
			timer = s.cfg.Clock.NewTimer(sleepUntil.Sub(s.cfg.Clock.Now()))
			wake = timer.C()
			if !sleepUntil.Equal(sleepLogged) {
				s.logf(agentlog.LevelDebug, agentlog.StatusSleeping, "sleeping until %s", sleepUntil.Format(time.RFC3339Nano))
				sleepLogged = sleepUntil
			}
		} else if !sleepLogged.IsZero() || !idleLogged {
			s.logf(agentlog.LevelDebug, agentlog.StatusSleeping, "no job to fire; sleeping until a change")
			if s.cfg.OnIdle != nil {
				s.cfg.OnIdle()
			}
			sleepLogged, idleLogged = time.Time{}, true
		}
		t.Progress.Store(0)
		select {
		case <-ctx.Done():
			t.woke(timer)
			return context.Cause(ctx)
		case <-t.Changes:
			t.woke(timer)
			if err := changed(); err != nil {
				return err
			}
		case <-t.Requests:
			t.woke(timer)
			if wait := requestEvery - time.Since(requested); wait > 0 {
				if requestDue == nil {
					requestDue = time.After(wait)
				}
				continue
			}
			if err := requestedNow(); err != nil {
				return err
			}
		case <-requestDue:
			t.woke(timer)
			requestDue = nil
			if err := requestedNow(); err != nil {
				return err
			}
		case <-reloadDue:
			t.woke(timer)
			if err := reload(); err != nil {
				return err
			}
			if err := takeRequests(); err != nil { // those of the jobs just loaded
				return err
			}
		case <-writePlans:
			t.woke(timer)
			writePlans = nil
			if err := s.recordPlans(ctx, records, p); err != nil {
				return err
			}
			select {
			case t.UpkeepDue <- struct{}{}:
			default: // due already
			}
		case <-recheck:
			t.woke(timer)
			recheck = nil
			if err := s.Abandon(ctx, records); err != nil {
				return err
			}
		case <-wake:
		}
	}
}

// recordPlans writes the next planned runs that changed.
func (s *Service) recordPlans(ctx context.Context, records *pgxpool.Pool, p *planner) error {
	changed := p.changedPlans()
	if len(changed.ids) == 0 {
		return nil
	}
	return sqlschema.JobPlan(ctx, records, changed.ids, changed.next)
}

// warm opens, ahead of a fire, the sessions its runs will need: as many per owner as the owner
// has jobs due then, as far as the budget has room, so that no run waits for a connection at its
// minute. Opening a session sends no statement but those reading its identity and warming its guard.
func (s *Service) warm(jobs []*job) {
	need := map[string]int{}
	for _, j := range jobs {
		if why, _ := refusal(j); why != "" {
			continue // it opens no session
		}
		need[j.owner]++
	}
	for owner, n := range need {
		go func() {
			ctx, cancel := context.WithTimeout(s.runCtx, warmLead)
			defer cancel()
			s.cfg.Owners.Warm(ctx, owner, n)
		}()
	}
}
