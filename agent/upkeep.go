package agent

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// abandonRecheck is how often the agent looks again for ended sessions while runs of other
// agents are still recorded as running.
const abandonRecheck = 2 * time.Second

// abandon marks abandoned the runs whose session has ended, and notes the jobs of runs of other
// agents still going (their sessions live: an agent that stopped softly, or one this agent took the
// lead from), whose fires are skipped meanwhile, to be looked at again.
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
	a.foreignRuns = len(foreign) > 0
	a.foreignBusy = make(map[int]bool, len(foreign))
	for _, id := range foreign {
		a.foreignBusy[id] = true
	}
	return nil
}

// upkeep is the term's service that keeps the run history, woken by the jobs service after each
// minute's runs (wake): it writes the run ends that could not be written before, and deletes the
// runs older than the retention setting at most once per pruneEvery. It sends no statement while
// no job runs.
func (a *dbAgent) upkeep(ctx context.Context, records *pgxpool.Pool, wake <-chan struct{}) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-wake:
		}
		a.flushPending(ctx, records)
		if time.Since(a.pruned) > pruneEvery {
			a.prune(ctx, records)
		}
	}
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

// flushPending records the run ends that could not be recorded before.
func (a *dbAgent) flushPending(ctx context.Context, records *pgxpool.Pool) {
	a.pendingMu.Lock()
	pending := a.pending
	a.pending = nil
	a.pendingMu.Unlock()
	for i, p := range pending {
		var err error
		if p.RunID == 0 {
			err = sqlschema.RunInsert(ctx, records, p.Run, p.Result)
		} else {
			_, err = sqlschema.RunFinish(ctx, records, p.RunID, p.Result)
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
