package jobs

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// inFlight is a job's run that waits for a session or goes on. Its fields but give and request
// are guarded by runningMu.
type inFlight struct {
	granted   bool                    // it was given a session, or leave to open one
	running   bool                    // it has its session: the run goes on
	give      context.CancelCauseFunc // ends its wait for a session
	request   int64                   // the request of a run asked for by hand; 0 otherwise
	scheduled *time.Time              // the fire it runs; nil for a startup run or one asked for by hand
	// next is the job's next fire, come while the run opened its session: recorded as skipped
	// once the session is open, run in its place when the server refused it (or the run failed to
	// start), with nextStop its term's context.
	next     *time.Time
	nextStop context.Context
	gone     bool // its job was dropped or paused: it does not start, nor does next
}

// errNextFire ends the wait for a session of a run whose job's next fire has come.
var errNextFire = errors.New("its next fire came")

// errJobGone ends the wait for a session of a run whose job was dropped or paused meanwhile.
var errJobGone = errors.New("the job was dropped or paused while its run waited for a session")

// fire starts a run of a job; scheduled is nil for a startup run. The run waits in its owner's
// line for a session of the server's budget, until the job's next fire at the latest; a run that
// could not start by then is recorded as an error, and the next fire waits in its place. A fire
// while the job's previous run goes on is recorded as skipped; so is one that waits for a session
// when the agent stops. A fire that comes while the previous run opens its session waits for the
// opening: skipped when the session opens, run when the server refused it.
func (s *Service) fire(stop context.Context, j *job, scheduled *time.Time) {
	s.runningMu.Lock()
	prev := s.running[j.id]
	switch {
	case prev == nil || prev.gone:
		// A run of the job before it was dropped or paused ends without starting: this one is
		// of the job loaded again.
	case prev.next != nil || prev.granted && !prev.running:
		// It opens its session (or ends, having a fire to run after it): this fire waits for that.
		if scheduled != nil {
			if prev.next != nil {
				s.skipLater(j, *prev.next, "a later fire came before the previous run had opened its session")
			}
			prev.next, prev.nextStop = scheduled, stop
		}
		s.runningMu.Unlock()
		return
	case prev.granted:
		s.runningMu.Unlock()
		if scheduled != nil {
			s.skipLater(j, *scheduled, "the previous run was still going")
		}
		return
	default:
		// Still waiting: it gives up now, with runningMu held, so that it cannot be granted a
		// session after this look (the budget grants under runningMu, through Hooks.Granted).
		prev.give(errNextFire)
	}
	s.launch(stop, j, scheduled, 0)
}

// endWaitsOfGone ends the waits for a session of the runs whose jobs are no longer loaded: dropped
// or paused, they do not start (the attacker review: a dropped job's run started minutes later,
// once a session was free). One opening its session does not start either once it has it, nor
// waits again when the server refuses it; one that has started goes on.
func (s *Service) endWaitsOfGone(p *planner) {
	s.runningMu.Lock()
	defer s.runningMu.Unlock()
	for id, f := range s.running {
		if f.running || p.jobs[id] != nil {
			continue
		}
		f.gone = true
		// Under runningMu, as fire does: a run cannot be granted its session after this look.
		if !f.granted {
			f.give(errJobGone)
		}
	}
}

// goneRun ends a run whose job was dropped or paused before it started: a fire is recorded as
// skipped now, and goneRun returns no result; a startup run, or one asked for by hand, gets an
// error result for the caller to record.
func (s *Service) goneRun(j *job, scheduled *time.Time) sqlschema.RunResult {
	if scheduled != nil {
		s.recordSkipped(j, *scheduled, errJobGone.Error())
		return sqlschema.RunResult{}
	}
	return sqlschema.RunResult{Status: sqlschema.RunError, Message: "the run did not start: " + errJobGone.Error()}
}

// fireRequested starts a run of a job asked for by hand (request), unless a run of the job waits
// for a session or goes on: then it returns why it did not start it.
func (s *Service) fireRequested(stop context.Context, j *job, request int64) (refused string) {
	s.runningMu.Lock()
	if prev := s.running[j.id]; prev != nil && !prev.gone {
		s.runningMu.Unlock()
		return fmt.Sprintf("job %s was not run: a run of it was still going (or waiting for a session)", j.name)
	}
	s.launch(stop, j, nil, request)
	return ""
}

// launch starts a run in the background; runningMu is held, and launch releases it.
func (s *Service) launch(stop context.Context, j *job, scheduled *time.Time, request int64) {
	wait, give := context.WithCancelCause(stop)
	f := &inFlight{give: give, request: request, scheduled: scheduled}
	s.running[j.id] = f
	s.runningMu.Unlock()
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		defer func() {
			give(nil)
			s.runningMu.Lock()
			if s.running[j.id] == f {
				delete(s.running, j.id)
			}
			if next := f.next; next != nil {
				// A fire that came while this run opened a session it did not get runs now,
				// unless its job is gone.
				f.next = nil
				if f.gone {
					s.runningMu.Unlock()
					s.skipLater(j, *next, errJobGone.Error())
					return
				}
				s.launch(f.nextStop, j, next, 0)
				return
			}
			s.runningMu.Unlock()
		}()
		s.execute(j, scheduled, request, wait, f)
	}()
}

// skipLater records, in the background, that the fire of j at `at` did not run, and why.
func (s *Service) skipLater(j *job, at time.Time, why string) {
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		s.recordSkipped(j, at, why)
	}()
}

// requestsInFlight returns the requests whose runs wait for a session or go on.
func (s *Service) requestsInFlight() []int64 {
	s.runningMu.Lock()
	defer s.runningMu.Unlock()
	ids := []int64{}
	for _, f := range s.running {
		if f.request != 0 {
			ids = append(ids, f.request)
		}
	}
	return ids
}

// inFlight reports whether the run of job id's fire at `at` waits for a session or goes on, or
// waits to run after the job's run before.
func (s *Service) inFlight(id int, at time.Time) bool {
	s.runningMu.Lock()
	defer s.runningMu.Unlock()
	f := s.running[id]
	return f != nil && (f.scheduled != nil && f.scheduled.Equal(at) || f.next != nil && f.next.Equal(at))
}

// InFlight returns how many runs wait for a session or go on.
func (s *Service) InFlight() int {
	s.runningMu.Lock()
	defer s.runningMu.Unlock()
	return len(s.running)
}

// execute runs a job on a session of its owner and records the run: with its request when it was
// asked for by hand (0 otherwise). The session goes back to the
// budget as soon as the run has ended, before the bookkeeping: a waiting run takes it at once.
func (s *Service) execute(j *job, scheduled *time.Time, request int64, wait context.Context, f *inFlight) {
	records, err := s.cfg.Records()
	if err != nil {
		s.logf(agentlog.LevelError, agentlog.StatusFiring, "job %s not run: %v", j.ref(), err)
		return
	}
	run := sqlschema.Run{JobID: j.id, JobName: j.name, Owner: j.owner, OwnerID: j.ownerID, Scheduled: scheduled, Agent: s.cfg.Name, Request: request}
	var result sqlschema.RunResult
	var session *sessions.Session
	if why, hint := refusal(j); why != "" {
		result = sqlschema.RunResult{Status: sqlschema.RunError, SQLState: "42501", Message: why, Hint: hint}
	} else if session, err = s.cfg.Owners.Acquire(wait, j.owner, sessions.Hooks{
		Waiting: func(ahead int) {
			s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "job %s waiting for a session of its owner: %d runs of that role ahead", j.ref(), ahead)
		},
		Granted: func() {
			s.runningMu.Lock()
			f.granted = true
			s.runningMu.Unlock()
		},
		// The server refused the session: the run waits again, and the job's next fire ends its
		// wait (recorded as not started) rather than being skipped behind a run that never began;
		// at once when that fire came while the session was being opened.
		Refused: func() {
			s.runningMu.Lock()
			f.granted = false
			if f.gone {
				f.give(errJobGone)
			} else if f.next != nil {
				f.give(errNextFire)
			}
			s.runningMu.Unlock()
			if s.cfg.OnRefused != nil {
				s.cfg.OnRefused()
			}
		},
	}); err != nil {
		if errors.Is(context.Cause(wait), errJobGone) {
			if result = s.goneRun(j, scheduled); result.Status == "" {
				return
			}
		} else if scheduled != nil && !errors.Is(context.Cause(wait), errNextFire) && (errors.Is(err, sessions.ErrPoolClosed) || wait.Err() != nil) {
			s.recordSkipped(j, *scheduled, "the agent stopped before a session was free")
			return
		} else if errors.Is(context.Cause(wait), errNextFire) {
			result = s.notStarted(err)
		} else {
			result = s.failure(j, err)
		}
	}
	if session != nil {
		s.runningMu.Lock()
		gone := f.gone
		f.running = !gone
		next := f.next
		f.next = nil
		s.runningMu.Unlock()
		if next != nil {
			why := "the previous run was still going"
			if gone {
				why = errJobGone.Error()
			}
			s.skipLater(j, *next, why)
		}
		if gone {
			// Dropped or paused while its session opened: nothing ran on it.
			session.ReleaseKeepingState()
			session = nil
			if result = s.goneRun(j, scheduled); result.Status == "" {
				return
			}
		}
	}
	run.Started = s.cfg.Clock.Now()
	if result.Status != "" {
		result.Finished = run.Started
		s.logResult(j, result)
		s.cfg.Metrics.Fires(j.name, string(result.Status), 1)
		s.finish(records, run, 0, result)
		return
	}
	byHand := ""
	if request != 0 {
		byHand = fmt.Sprintf(" (by hand: request %d)", request)
	}
	s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "job %s started%s: SELECT %s", j.ref(), byHand, j.call)
	run.Session, run.SessionStart = int(session.PID), session.Start
	// A run going on past runningRowAfter gets its "running" row then, written beside it; the call
	// runs on this goroutine.
	var runID int64
	rowWritten := make(chan struct{})
	begun := time.Now()
	long := time.AfterFunc(runningRowAfter, func() { // real time: bookkeeping, not a schedule
		defer close(rowWritten)
		var err error
		if runID, err = sqlschema.RunStart(s.runCtx, records, run); err != nil {
			s.logf(agentlog.LevelError, agentlog.StatusFiring, "job %s: %v", j.ref(), err)
		}
	})
	result = s.runOn(session, j)
	s.logResult(j, result)
	if long.Stop() {
		// Let the other runs of this minute start before the bookkeeping.
		time.Sleep(time.Until(begun.Add(runningRowAfter))) // real time, as above
		s.runsStarted()
	} else {
		<-rowWritten
	}
	s.cfg.Metrics.RunEnded(j.name, string(result.Status), scheduled, run.Started, result.Finished)
	s.finish(records, run, runID, result)
}

// runOn runs SELECT <call>, a transaction of its own, on an owner session, and gives the session
// back: reset for the next run of its owner in the same round trip, or closed when the run's failure
// leaves it in doubt.
func (s *Service) runOn(session *sessions.Session, j *job) sqlschema.RunResult {
	if err := s.runCall(session, j); err != nil {
		return s.failure(j, err)
	}
	return sqlschema.RunResult{Finished: s.cfg.Clock.Now(), Status: sqlschema.RunOK}
}

// runCall sends, in one round trip and one transaction, the guard that checks the session is of
// the job's owner (still existing, allowed to log in, not expired) and, for a call bound to a view
// (schema version 15), that the view is still the owner's (sqlschema.RunViewGuardSQL), then
// SELECT from the view; for a call set before, that no other role could have its function called
// in place of the job's (sqlschema.RunGuardSQL), then SELECT <call>; each
// with the extended query protocol: one statement per message, so a call that holds a second
// statement is a syntax error, never run. The server skips the call when the guard fails. The
// session's reset follows in the same round trip (sessions.Session.Run).
func (s *Service) runCall(session *sessions.Session, j *job) error {
	stmts := make([]sessions.Statement, 0, 3)
	ctx := s.runCtx
	if j.timeout > 0 {
		// The job's time limit: the server's statement_timeout for the run's transaction, and the
		// run's context a second later in case the call lifted it.
		stmts = append(stmts, sessions.Statement{SQL: "SELECT pg_catalog.set_config('statement_timeout', $1, true)", Args: [][]byte{[]byte(strconv.FormatInt(j.timeout.Milliseconds(), 10))}})
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, j.timeout+time.Second)
		defer cancel()
	}
	owner := []byte(strconv.FormatUint(uint64(j.ownerID), 10))
	if j.viewCall != "" {
		stmts = append(stmts,
			sessions.Statement{SQL: sqlschema.RunViewGuardSQL(), Args: [][]byte{owner, []byte(j.owner), []byte(j.view)}},
			sessions.Statement{SQL: j.viewCall})
		return session.Run(ctx, stmts)
	}
	stmts = append(stmts,
		sessions.Statement{SQL: sqlschema.RunGuardSQL(), Args: [][]byte{owner, []byte(j.owner),
			[]byte(strconv.FormatUint(uint64(j.funcOID), 10)), []byte(j.stored.Schema), []byte(j.stored.Name), []byte(strconv.FormatBool(j.stored.Castable))}},
		sessions.Statement{SQL: CallSQL(j.call)})
	return session.Run(ctx, stmts)
}

// CallSQL returns the statement that runs a job's call. IS NULL: the call's value stays in the
// server; a job returning 300 MB sends back a boolean.
func CallSQL(call string) string { return "SELECT (" + call + ") IS NULL" }

// unrun describes a fire of j at `at` that did not run.
func (s *Service) unrun(j *job, at time.Time, status sqlschema.RunStatus, why string) sqlschema.Unrun {
	return sqlschema.Unrun{JobID: j.id, JobName: j.name, Owner: j.owner, OwnerID: j.ownerID, Scheduled: at, Status: status, Message: why, Agent: s.cfg.Name}
}

// recordSkipped records a fire that did not run.
func (s *Service) recordSkipped(j *job, at time.Time, why string) {
	s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "job %s: fire of %s skipped: %s", j.ref(), at.Format(time.RFC3339), why)
	s.cfg.Metrics.Fires(j.name, string(sqlschema.RunSkipped), 1)
	records, err := s.cfg.Records()
	if err != nil {
		s.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sqlschema.RunRecord(ctx, records, s.unrun(j, at, sqlschema.RunSkipped, why)); err != nil {
		s.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
	}
}
