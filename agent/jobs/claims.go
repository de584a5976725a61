package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// claimAhead claims, while the sessions open, the fires of jobs at `at`, so that at the minute
// the runs start with no round trip before them. A claimed fire that never gets a run row (the
// agent died first) is recorded as missed by the next agent.
func (s *Service) claimAhead(ctx context.Context, records *pgxpool.Pool, epoch int64, jobs []*job, at time.Time, claimed map[int]claim) error {
	ids := make([]int, len(jobs))
	ats := make([]time.Time, len(jobs))
	for i, j := range jobs {
		ids[i], ats[i] = j.id, at
	}
	got, err := sqlschema.FireClaim(ctx, records, ids, ats, epoch)
	if err != nil {
		return err
	}
	now := time.Now()
	for _, c := range got {
		claimed[c.JobID] = claim{at: at, owner: c.Owner, when: now}
	}
	return nil
}

// claim is a fire claimed ahead, with the name its job's owner had then.
type claim struct {
	at    time.Time
	owner *string
	when  time.Time // real time of the claim
}

// claimFresh is how long after a claim ahead its fire may run without asking again whether this
// agent still leads: a claim older than that was made before a stop or a hang of this agent,
// during which another may have taken over.
const claimFresh = warmLead + time.Second

// fireClaimed fires the due fires this leader epoch has claimed: ahead, or now. A fire that
// another agent claimed, or any fire once another agent has taken the lead, does not run: the
// term's lost signals are looked at first, and a claim ahead that is no longer fresh is confirmed
// against the lease.
func (s *Service) fireClaimed(ctx context.Context, records *pgxpool.Pool, t Term, fires []dueFire, claimed map[int]claim) error {
	if err := context.Cause(ctx); err != nil {
		return err // the term ends: the lease or the session is lost, or the agent stops
	}
	var ids []int
	var ats []time.Time
	ok := make(map[int]*string, len(fires)) // owner names now, by job
	stale := false
	for _, f := range fires {
		if c, ahead := claimed[f.job.id]; ahead && c.at.Equal(f.at) {
			ok[f.job.id] = c.owner
			stale = stale || time.Since(c.when) > claimFresh
		} else {
			ids, ats = append(ids, f.job.id), append(ats, f.at)
			delete(claimed, f.job.id) // a claim of another fire time: passed over
		}
	}
	// A claim ahead is dropped only once its fire is handed to a run or recorded: a statement
	// below that fails (and restarts the services) leaves it for the next term (Term.Resumes).
	if stale {
		if holds, err := sqlschema.LeaderHolds(ctx, records, t.Epoch); err != nil {
			return err
		} else if !holds {
			return sqlschema.ErrLostLead
		}
	}
	if len(ids) > 0 {
		got, err := sqlschema.FireClaim(ctx, records, ids, ats, t.Epoch)
		if err != nil {
			return err
		}
		at := make(map[int]time.Time, len(ids))
		for i, id := range ids {
			at[id] = ats[i]
		}
		for _, c := range got {
			ok[c.JobID] = c.Owner
			claimed[c.JobID] = claim{at: at[c.JobID], owner: c.Owner, when: time.Now()} // until handled below
		}
	}
	now := s.cfg.Clock.Now()
	for _, f := range fires {
		owner, mine := ok[f.job.id]
		if !mine {
			delete(claimed, f.job.id)
			s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "job %s: the fire of %s was claimed by another agent", f.job.ref(), f.at.Format(time.RFC3339))
			continue
		}
		if late := now.Sub(f.at); late > t.LateLimit {
			// This agent was stopped or hung past the fire: it does not run it that late.
			msg := fmt.Sprintf("the fire of %s was missed: the agent could run it only %s late, past the late_limit setting (%s)", f.at.Format(time.RFC3339), late.Round(time.Second), t.LateLimit)
			s.logf(agentlog.LevelEssential, agentlog.StatusFiring, "job %s: %s", f.job.ref(), msg)
			if err := sqlschema.RunRecord(ctx, records, s.unrun(f.job, f.at, sqlschema.RunMissed, msg)); err != nil {
				return err
			}
			delete(claimed, f.job.id)
			s.cfg.Metrics.Fires(f.job.name, string(sqlschema.RunMissed), 1)
			continue
		} else if late > lateTolerance {
			s.logf(agentlog.LevelEssential, agentlog.StatusFiring, "job %s: the fire of %s runs %s late: no agent could run it in time (late_limit %s)", f.job.ref(), f.at.Format(time.RFC3339), late.Round(time.Millisecond), t.LateLimit)
		}
		delete(claimed, f.job.id) // handed to its run, or recorded as skipped
		if s.foreignBusy[f.job.id] {
			s.recordSkipped(f.job, f.at, "a run of another agent was still going")
			continue
		}
		at := f.at
		s.fire(t.Stop, f.job.ownedBy(owner), &at)
	}
	return nil
}

// recordMissed records, once per job and outage, the fires that passed while no agent was
// active, and claims them so that no agent counts them again. The row has the last missed fire
// (the claimed one); its message gives the first and the count.
func (s *Service) recordMissed(ctx context.Context, records *pgxpool.Pool, epoch int64, missed []missedFires) error {
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
		s.logf(agentlog.LevelEssential, agentlog.StatusStarting, "job %s: %s", m.job.ref(), msg)
		if err := sqlschema.RunRecord(ctx, records, s.unrun(m.job, m.last, sqlschema.RunMissed, msg)); err != nil {
			return err
		}
		s.cfg.Metrics.Fires(m.job.name, string(sqlschema.RunMissed), m.count)
	}
	return nil
}
