package jobs

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// answerOrphans answers, at the start of a term, the requests an earlier lead took but left
// without a run recorded, except those whose runs this agent still has in flight (from its earlier
// term: runs outlive terms).
func (s *Service) answerOrphans(ctx context.Context, records *pgxpool.Pool, t Term) error {
	n, err := sqlschema.RequestOrphans(ctx, records, t.Epoch, s.requestsInFlight())
	if n > 0 {
		s.logf(agentlog.LevelEssential, agentlog.StatusStarting, "%d requests to run a job now were left by an earlier agent without a run: answered, to be asked again", n)
	}
	return err
}

// takeRequests takes the requests to run a job now (pgj_run_job) and starts their runs: like any
// run, on a session of the job's owner, recorded with the request's id and no scheduled time. A
// request for a job the agent does not plan (paused, or dropped meanwhile), or whose run goes on,
// is answered with why it did not run. reload loads the jobs again: a job made a moment ago may
// not be loaded yet.
func (s *Service) takeRequests(ctx context.Context, records *pgxpool.Pool, t Term, p *planner, reload func() error) error {
	taken, err := sqlschema.RequestTake(ctx, records, t.Epoch)
	if err != nil || len(taken) == 0 {
		return err
	}
	for _, r := range taken {
		if p.jobs[r.JobID] == nil {
			if err := reload(); err != nil {
				return err
			}
			break
		}
	}
	for _, r := range taken {
		var why string
		if pj := p.jobs[r.JobID]; pj == nil {
			why = fmt.Sprintf("job %s was not run: it is paused (pgj_resume_job resumes it) or no longer exists", r.JobName)
		} else {
			run := *pj.job // a copy: a reload changes the planner's job while the run goes on
			s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "job %s asked to run now (request %d)", run.name, r.ID)
			why = s.fireRequested(t.Stop, &run, r.ID)
		}
		if why == "" {
			continue
		}
		s.logf(agentlog.LevelEssential, agentlog.StatusFiring, "request %d: %s", r.ID, why)
		if err := sqlschema.RequestRefuse(ctx, records, r.ID, why); err != nil {
			return err
		}
	}
	return nil
}
