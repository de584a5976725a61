package agent

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// upkeep is the term's service that keeps the run history, woken by the jobs service after each
// minute's runs (wake): it writes the run ends that could not be written before, and at most once
// per pruneEvery deletes the runs older than the retention setting and has the views of former
// calls dropped. It sends no statement while no job runs.
func (a *dbAgent) upkeep(ctx context.Context, records *pgxpool.Pool, wake <-chan struct{}) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
		a.jobs.FlushPending(ctx, records)
		if time.Since(a.pruned) > pruneEvery {
			a.prune(ctx, records)
		}
	}
}

// prune deletes the runs older than the run_retention setting, and the tasks older than
// task_retention, and tells the callViews service to drop the views of former calls that no job
// used at the last prune and none uses now: those the drop after a change left (a run still held
// them). It does not wait for that drop, which a role can make long.
func (a *dbAgent) prune(ctx context.Context, records *pgxpool.Pool) {
	a.pruned = time.Now()
	if n, err := sqlschema.RunPrune(ctx, records); err != nil {
		a.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
	} else if n > 0 {
		a.logf(agentlog.LevelInfo, agentlog.StatusFiring, "deleted %d runs older than the run_retention setting", n)
	}
	if n, err := sqlschema.TaskPrune(ctx, records); err != nil {
		a.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
	} else if n > 0 {
		a.logf(agentlog.LevelInfo, agentlog.StatusFiring, "deleted %d ended tasks older than the task_retention setting", n)
	}
	select {
	case a.sweepDue <- struct{}{}:
	default: // one is due already
	}
}
