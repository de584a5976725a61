package task

import (
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/authwatch"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// start runs a claimed task in the background, its input followed by the proof of its attempt
// under the key of the term that claimed it.
func (s *Service) start(t sqlschema.ClaimedTask) {
	s.mu.Lock()
	s.running[t.ID] = runEntry{attempt: t.Attempt}
	s.pending++
	key := s.key
	ticket := s.queue(t.Owner)
	s.mu.Unlock()
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		defer s.ran(t.ID)
		defer func() {
			if p := recover(); p != nil { // a defect must not end the agent and every database's jobs
				s.withdraw(t.Owner, ticket) // if it panicked before its turn
				s.logf(agentlog.LevelError, agentlog.StatusFiring, "task %d: internal error: %v", t.ID, p)
				now := s.cfg.Clock.Now()
				text := AgentErrorText(fmt.Sprintf("the agent failed running the task: %v", p), t.Input)
				s.end(t, now, now, Result{Error: &text, SQLState: "XX000"})
			}
		}()
		s.run(t, key, ticket)
	}()
}

// forget drops a task this agent claimed but leaves to the next leader's reset: the agent stops.
func (s *Service) forget(id int64) {
	s.mu.Lock()
	delete(s.running, id)
	s.mu.Unlock()
}

// run runs a claimed task on a session of its owner and queues its end. The session goes back as
// soon as the input has run, before the end is written.
func (s *Service) run(t sqlschema.ClaimedTask, key termKey, ticket uint64) {
	refuse := func(why string) {
		s.withdraw(t.Owner, ticket)
		now := s.cfg.Clock.Now()
		text := AgentErrorText(why, t.Input)
		s.end(t, now, now, Result{Error: &text, SQLState: "42501"})
	}
	switch {
	case t.OwnerName == nil:
		refuse(fmt.Sprintf("task %d: its owner (role OID %d) was dropped: the task does not run", t.ID, t.Owner))
		return
	case !t.OwnerLogin:
		refuse(fmt.Sprintf("task %d: its owner %s may not log in or has expired: the task does not run", t.ID, *t.OwnerName))
		return
	}
	if !s.enter(t.Owner, ticket) {
		s.logf(agentlog.LevelInfo, agentlog.StatusStopping, "task %d not started: the agent stopped; it runs under the next agent", t.ID)
		s.forget(t.ID)
		return
	}
	defer s.leave(t.Owner)
	if t.Expires != nil && s.cfg.Clock.Now().After(*t.Expires) {
		// Claimed ahead, it waited for a slot past its plan + active: it does not run, as it would
		// not have been claimed then (pg_task's active).
		text := "task not active"
		s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "task %d not started: it waited for a slot past its plan + active (%s); GONE", t.ID, t.Expires.Format(time.RFC3339))
		s.writes.end(sqlschema.TaskEnd{ID: t.ID, Attempt: t.Attempt, Start: *t.Expires, Stop: *t.Expires, Error: &text, Gone: true})
		s.cfg.Metrics.TaskEnded("GONE", 0)
		return
	}
	if !s.current(key.epoch) {
		// Claimed ahead by a term that ended before its turn came: the next leader runs it; this
		// agent's next term resets it if it leads again.
		s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "task %d not started: the term that claimed it ended; it runs under the next leader", t.ID)
		s.forget(t.ID)
		s.needReset.Store(true)
		return
	}
	if t.Remote != nil {
		s.runRemote(t)
		return
	}
	for try := 1; ; try++ {
		r, start, stop, ran := s.runOnce(t, key)
		if !ran {
			return // the agent stopped: left for the next agent
		}
		if r.Unsent && try < sessionTries {
			s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "task %d: its session had ended before the input was sent; trying another", t.ID)
			continue
		}
		s.end(t, start, stop, r)
		return
	}
}

// sessionTries is how many sessions a run tries when the one it got had ended (the server
// restarted, say) before its input was sent.
const sessionTries = 3

// runOnce runs a task on a session of its owner, and gives the session back as soon as the input
// has run, before the end is written; false when the agent stopped meanwhile (the task is left
// for the next agent). The start (WORK, with the session's backend) is written once the guard
// ran on the session.
func (s *Service) runOnce(t sqlschema.ClaimedTask, key termKey) (r Result, start, stop time.Time, ran bool) {
	owner := *t.OwnerName
	session, err := s.cfg.Sessions.Acquire(s.runCtx, owner, sessions.Hooks{
		Waiting: func(ahead int) {
			s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "task %d waiting for a session of %s: %d runs of that role ahead", t.ID, pgx.Identifier{owner}.Sanitize(), ahead)
		},
	})
	if err != nil {
		if s.runCtx.Err() != nil {
			s.logf(agentlog.LevelInfo, agentlog.StatusStopping, "task %d not started: the agent stopped; it runs under the next agent", t.ID)
			s.forget(t.ID)
			return r, start, stop, false
		}
		now := s.cfg.Clock.Now()
		text := AgentErrorText(fmt.Sprintf("task %d: no session as %s: %v", t.ID, owner, err), t.Input)
		return Result{Error: &text, SQLState: authwatch.SQLState(err)}, now, now, true
	}
	given := false // back to the budget: a panic before it closes the session, not leaking it
	defer func() {
		if p := recover(); p != nil {
			if !given {
				session.Close()
			}
			panic(p) // to start's handler, which ends the task
		}
	}()
	start = s.cfg.Clock.Now()
	begun := func() {
		s.cfg.Metrics.TaskStarted(start.Sub(t.Plan))
		s.writes.start(sqlschema.TaskStarted{ID: t.ID, Attempt: t.Attempt, PID: session.PID, Start: start})
		s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "task %d started as %s (attempt %d)", t.ID, pgx.Identifier{owner}.Sanitize(), t.Attempt)
	}
	r = execute(s.runCtx, session.Conn.PgConn(), sqlschema.TaskBeginSQL(t.ID, t.Owner, t.Timeout), t.Input, key.proof(t.ID, t.Attempt, session.PID), begun, NewOutput(t.Format))
	stop = s.cfg.Clock.Now()
	given = true
	if s.runCtx.Err() != nil {
		// The agent stopped and its grace ended: the run was cancelled, not failed. Its row stays
		// WORK for the next agent to reset and run again.
		session.Close()
		s.forget(t.ID)
		s.logf(agentlog.LevelError, agentlog.StatusStopping, "task %d cancelled by the agent's stop; it runs again under the next agent", t.ID)
		return r, start, stop, false
	}
	switch {
	case r.Broken:
		session.Close()
	case t.Count > 0 && session.Runs >= t.Count, t.Live > 0 && stop.Sub(session.Start) >= t.Live:
		session.Close() // pg_task's count and live: the session takes no further task
	case t.Save:
		session.ReleaseKeepingState()
	default:
		session.Release()
	}
	return r, start, stop, true
}

// end queues the end of a task's attempt: a retry when it failed with attempts left and a failure
// that may pass, else its final state, with the next row of a repeating task and the spacing of a
// negative-max group.
func (s *Service) end(t sqlschema.ClaimedTask, start, stop time.Time, r Result) {
	e := sqlschema.TaskEnd{ID: t.ID, Attempt: t.Attempt, Start: start, Stop: stop, Output: r.Output, Error: r.Error}
	now := s.cfg.Clock.Now()
	if positive(t.Repeat) {
		// Also on a retry: when the attempt's proof committed (its session ended after the commit),
		// the end is written DONE and the next row is due all the same.
		next := NextPlan(t.Origin, t.Repeat, t.Drift, stop, now, s.cfg.Location)
		e.NextPlan = &next
	}
	if t.Max < 0 {
		pause := pgtype.Interval{Microseconds: int64(-t.Max) * 1000, Valid: true}
		at := NextPlan(t.Plan, pause, t.Drift, stop, now, s.cfg.Location)
		e.SpaceAt = &at
	}
	if r.Error != nil {
		if t.Attempt <= t.Retries && retried(r.SQLState) && !r.Committed {
			at := RetryAt(now, t.RetryDelay, t.Attempt)
			e.RetryAt = &at
			unless := ""
			if r.Broken {
				unless = " (unless its work committed before the session ended: then it ends DONE)"
			}
			s.logf(agentlog.LevelError, agentlog.StatusFiring, "task %d failed (attempt %d of %d), runs again at %s%s: %s", t.ID, t.Attempt, t.Retries+1, at.Format(time.RFC3339), unless, firstLine(*r.Error))
			s.cfg.Metrics.TaskRetried()
			s.writes.end(e)
			return
		}
		if r.Committed {
			s.logf(agentlog.LevelError, agentlog.StatusFiring, "task %d ends DONE, its work committed and its output lost: %s", t.ID, firstLine(*r.Error))
		} else {
			s.logf(agentlog.LevelError, agentlog.StatusFiring, "task %d failed: %s", t.ID, firstLine(*r.Error))
		}
	} else {
		s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "task %d done in %s", t.ID, stop.Sub(start).Round(time.Millisecond))
	}
	state := "DONE"
	if r.Error != nil && !r.Committed {
		state = "FAIL"
	}
	s.cfg.Metrics.TaskEnded(state, stop.Sub(start))
	s.writes.end(e)
}

// positive tells whether an interval moves time forward, as PostgreSQL compares it with zero.
func positive(i pgtype.Interval) bool {
	return i.Valid && sqlschema.IntervalDuration(i) > 0
}

// firstLine returns the first line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// runRemote runs a task whose input goes to another server, on a connection of its own (not from
// the budget, which is this server's, but counted within its owner's logins), and queues its end.
func (s *Service) runRemote(t sqlschema.ClaimedTask) {
	owner := *t.OwnerName
	if err := s.cfg.Sessions.AwaitLogin(s.runCtx, owner); err != nil { // the owner's logins a second
		s.forget(t.ID)
		s.logf(agentlog.LevelInfo, agentlog.StatusStopping, "task %d not started: the agent stopped; it runs under the next agent", t.ID)
		return
	}
	start := s.cfg.Clock.Now()
	s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "task %d started as %s on a remote server (attempt %d)", t.ID, pgx.Identifier{*t.OwnerName}.Sanitize(), t.Attempt)
	r := runRemote(s.runCtx, *t.Remote, t.OwnerSuper, s.maxIterations(), t.Timeout, t.Input, NewOutput(t.Format), remoteHooks{
		logins: func(n int) { s.cfg.Sessions.ChargeLogins(owner, n-1) }, // the first was counted before
		started: func(pid uint32) {
			s.cfg.Metrics.TaskStarted(start.Sub(t.Plan))
			s.writes.start(sqlschema.TaskStarted{ID: t.ID, Attempt: t.Attempt, PID: pid, Start: start})
		},
	})
	if s.runCtx.Err() != nil {
		s.forget(t.ID)
		s.logf(agentlog.LevelError, agentlog.StatusStopping, "task %d cancelled by the agent's stop; it runs again under the next agent", t.ID)
		return
	}
	s.end(t, start, s.cfg.Clock.Now(), r)
}
