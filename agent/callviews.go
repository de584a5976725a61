package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
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
// change may start on its old view until the reload that brings the change). At each prune
// (sweepDue, at most hourly) it drops those listed at the one before, which a run held then. It
// sends no statement while nothing changes.
//
// The drops are its alone, on a session of their own when the budget has one (dropCallViews): a
// role could make a drop of its own former views run for minutes before schema version 18 (a DROP
// walks, uninterruptibly, what the role made depend on a view since it was checked), which must
// not keep a record session, the upkeep or a term's start.
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
		case <-a.sweepDue:
			a.orphanViews = a.sweepCallViews(ctx, records, a.orphanViews) // those left after the last change
		case <-due:
			due = nil
			left := a.sweepCallViews(ctx, records, listed)
			// views orphaned since the list: another round; those a run held wait for the next
			// change, or for the hourly prune
			if newer := without(left, listed); len(newer) > 0 {
				listed, due = newer, time.After(a.opt.CallViewsGrace)
			}
		}
	}
}

// sweepCallViews drops those of listed (views of former calls found unused a while ago) that no
// job uses, and returns the views no job uses now (listed again from records), for the next drop.
// When the drop could not run (no session opened for it) it returns listed, for the next.
func (a *dbAgent) sweepCallViews(ctx context.Context, records *pgxpool.Pool, listed []string) []string {
	if len(listed) > 0 {
		if err := a.dropCallViews(ctx, records, listed); err != nil {
			if ctx.Err() == nil { // a term that ends is no error
				a.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
			}
			return listed
		}
	}
	orphans, err := sqlschema.CallViewsOrphaned(ctx, records)
	if err != nil && ctx.Err() == nil {
		a.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
	}
	return orphans
}

// sweepConnectWait is how long the drop waits for its session to open (the TCP dial alone is
// bounded by connConfig).
const sweepConnectWait = 15 * time.Second

// dropCallViews drops those of listed that no job uses, on a session it opens for it and closes
// after, taken out of the server's budget meanwhile; when the budget has no session for it now
// (a small sessions setting, or runs holding all the others), on one of records, as before that
// session: since schema version 18 no role can make a drop statement walk for long. It fails only
// when the session could not be opened.
func (a *dbAgent) dropCallViews(ctx context.Context, records *pgxpool.Pool, listed []string) error {
	var q sqlschema.DB = records
	if unreserve, ok := a.budget.TryReserve(1); ok {
		defer unreserve()
		cfg, err := a.connConfig("")
		if err != nil {
			return fmt.Errorf("open a session to drop %d views of former job calls: %w", len(listed), err)
		}
		cfg.RuntimeParams["application_name"] = applicationName(a.db.ID) + " sweep"
		connectCtx, cancel := context.WithTimeout(ctx, sweepConnectWait)
		conn, err := pgx.ConnectConfig(connectCtx, cfg)
		cancel()
		if err != nil {
			return fmt.Errorf("open a session to drop %d views of former job calls (tried again at a later drop): %w", len(listed), err)
		}
		defer conn.Close(context.Background())
		q = conn
	}
	swept, err := sqlschema.CallViewsDrop(ctx, q, listed)
	if err != nil && ctx.Err() == nil {
		a.logf(agentlog.LevelError, agentlog.StatusFiring, "%v", err)
	}
	if swept.Dropped > 0 || swept.Aside > 0 {
		a.logf(agentlog.LevelInfo, agentlog.StatusFiring, "dropped %d views or tables of former job calls, and set %d aside for a later drop", swept.Dropped, swept.Aside)
	}
	if swept.Held > 0 || swept.Deferred > 0 || swept.Failed > 0 || swept.Waiting > 0 {
		a.logf(agentlog.LevelInfo, agentlog.StatusFiring, "left %d views or tables of former job calls that other sessions held or something hangs on, %d whose drop failed, %d past the drop's time budget, and %d set aside while transactions that were open then still are, for a later drop",
			swept.Held, swept.Failed, swept.Deferred, swept.Waiting)
	}
	if a.opt.OnCallViewsDropped != nil {
		a.opt.OnCallViewsDropped(a.db.ID, swept.Dropped)
	}
	return nil
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
