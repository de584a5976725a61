package agent

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// callViews is the term's service that drops the views of former calls (schema version 15):
// pgj_update_job and pgj_drop_job leave the view of the call they replace, so that a run of the old
// call goes on and no role's open transaction holds the runs of its job up. After the jobs service
// reloads on a change (reloaded), it lists the views no job uses (and, since schema version 16,
// the tables of arguments no view reads and the call schemas left empty of roles without jobs),
// and drops them CallViewsGrace later if no job uses them then (a run of a job loaded before the
// change may start on its old view until the reload that brings the change). It sends no
// statement while nothing changes.
func (a *dbAgent) callViews(ctx context.Context, records *pgxpool.Pool, reloaded <-chan struct{}) error {
	var due <-chan time.Time
	var listed []string
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-reloaded:
			if due != nil {
				continue // the views of this change are listed at the drop that is due
			}
			orphans, err := sqlschema.CallViewsOrphaned(ctx, records)
			if err != nil {
				a.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
				continue
			}
			if len(orphans) > 0 {
				listed, due = orphans, time.After(a.opt.CallViewsGrace)
			}
		case <-due:
			due = nil
			left := a.dropCallViews(ctx, records, listed)
			// views orphaned since the list: another round; those a run held wait for the next
			// change, or for the hourly prune
			if newer := without(left, listed); len(newer) > 0 {
				listed, due = newer, time.After(a.opt.CallViewsGrace)
			}
		}
	}
}

// dropCallViews drops those of listed (views of former calls found unused a while ago) that no
// job uses, and returns the views no job uses now, for the next drop.
func (a *dbAgent) dropCallViews(ctx context.Context, records *pgxpool.Pool, listed []string) []string {
	swept, err := sqlschema.CallViewsDrop(ctx, records, listed)
	if err != nil {
		a.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
	}
	if swept.Dropped > 0 {
		a.logf(agentlog.LevelInfo, agentlog.StatusFiring, "dropped %d views of former job calls", swept.Dropped)
	}
	if swept.Held > 0 || swept.Deferred > 0 || swept.Failed > 0 {
		a.logf(agentlog.LevelInfo, agentlog.StatusFiring, "left %d views or tables of former job calls that other sessions held or something hangs on, %d whose drop failed, and %d past the drop's time budget, for a later drop",
			swept.Held, swept.Failed, swept.Deferred)
	}
	if len(listed) > 0 && a.opt.OnCallViewsDropped != nil {
		a.opt.OnCallViewsDropped(a.db.ID, swept.Dropped)
	}
	orphans, err := sqlschema.CallViewsOrphaned(ctx, records)
	if err != nil {
		a.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
	}
	return orphans
}

// without returns the views of views that are not in old.
func without(views, old []string) []string {
	seen := make(map[string]bool, len(old))
	for _, v := range old {
		seen[v] = true
	}
	var rest []string
	for _, v := range views {
		if !seen[v] {
			rest = append(rest, v)
		}
	}
	return rest
}
