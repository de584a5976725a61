package jobs

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// requestEvery is how often, at most, the agent takes the requests to run a job now when notified.
const requestEvery = 100 * time.Millisecond

// requestTakeMax is how many requests one take takes at most; more are taken requestEvery later.
const requestTakeMax = 100

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

// takeRequests takes the requests to run a job now (pgj_run_job) of the jobs p plans, and starts
// their runs: like any run, on a session of the job's owner, recorded with the request's id and no
// scheduled time. The take answers those whose job was paused or dropped since; those whose job
// has a run going are answered here, in one statement. It reports whether it took as many as one
// take may: more may wait.
func (s *Service) takeRequests(ctx context.Context, records *pgxpool.Pool, t Term, p *planner) (more bool, err error) {
	planned := make(map[int]string, len(p.jobs))
	for id, pj := range p.jobs {
		planned[id] = pj.version
	}
	taken, err := sqlschema.RequestTake(ctx, records, t.Epoch, planned, requestTakeMax)
	if err != nil || len(taken) == 0 {
		return false, err
	}
	var refused []int64
	var why []string
	for _, r := range taken {
		pj := p.jobs[r.JobID]
		if pj == nil { // not planned since the take read the ids: cannot happen on this goroutine
			refused, why = append(refused, r.ID), append(why, fmt.Sprintf("job %s was not run: the agent no longer plans it", r.JobName))
			continue
		}
		run := *pj.job // a copy: a reload changes the planner's job while the run goes on
		s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "job %s asked to run now (request %d)", run.ref(), r.ID)
		if reason := s.fireRequested(t.Stop, &run, r.ID); reason != "" {
			refused, why = append(refused, r.ID), append(why, reason)
		}
	}
	if len(refused) > 0 {
		s.logf(agentlog.LevelEssential, agentlog.StatusFiring, "%d of %d requests to run a job now not run; the first: %s", len(refused), len(taken), why[0])
		if err := sqlschema.RequestRefuse(ctx, records, refused, why); err != nil {
			return false, err
		}
	}
	return len(taken) == requestTakeMax, nil
}
