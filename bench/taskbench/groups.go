package main

import (
	"context"
	"fmt"
	"os"
	"time"
)

// reportGroups measures the cost of groups: a burn-down over 1,000 groups whose limits do not bind
// against one without limits, and the tasks of free groups while 100,000 ready tasks wait in
// saturated groups of the same role.
func (e *env) reportGroups(ctx context.Context) error {
	const n = 20000
	unlimited, err := e.groupBurnDown(ctx, n, "'SELECT 1', 1000000, false, 'one', 0", "", 0)
	if err != nil {
		return err
	}
	grouped, err := e.groupBurnDown(ctx, n, "'SELECT 1', 3, false, 'g' || g % 1000, 0", "", 0)
	if err != nil {
		return err
	}
	// Free tasks in 100 groups of the default max (0, one at a time each) behind 100,000 ready
	// tasks of the same role in two groups whose one place a long task holds.
	free := "'SELECT 1', 0, false, 'free' || g % 100, 0"
	alone, err := e.groupBurnDown(ctx, n, free, "", 0)
	if err != nil {
		return err
	}
	behind, err := e.groupBurnDown(ctx, n, free, "'SELECT pg_sleep(600)', 0, false, 'full' || g % 2, 0", 100000)
	if err != nil {
		return err
	}
	section(os.Stdout, "Groups (issue 13, 4)",
		figure{name: fmt.Sprintf("%d tasks in one group, max 1,000,000", n), value: unlimited, unit: "tasks/s", goal: noGoal},
		figure{name: "the same over 1,000 groups, max 3 (limits not binding)", value: grouped, unit: "tasks/s", goal: noGoal},
		figure{name: "groups / no limit", value: grouped / unlimited, unit: "", goal: 0.85},
		figure{name: fmt.Sprintf("%d tasks in 100 free groups (max 0)", n), value: alone, unit: "tasks/s", goal: noGoal},
		figure{name: "the same behind 100,000 ready in saturated groups", value: behind, unit: "tasks/s", goal: noGoal},
		figure{name: "free groups behind a saturated backlog / alone", value: behind / alone, unit: "", goal: 0.5})
	return nil
}

// groupBurnDown queues backlog tasks of row blocked (their groups' places held by the first of
// them, which run long) and then n tasks of row, and returns how fast the n ran.
func (e *env) groupBurnDown(ctx context.Context, n int, row, blocked string, backlog int) (float64, error) {
	db, err := e.newDatabase(ctx, "groups")
	if err != nil {
		return 0, err
	}
	if backlog > 0 {
		if err := e.queueTasks(ctx, db, backlog, blocked); err != nil {
			return 0, err
		}
	}
	if err := e.queueTasks(ctx, db, n, row); err != nil {
		return 0, err
	}
	if err := e.exec(ctx, db, "VACUUM ANALYZE pgjobs.task"); err != nil {
		return 0, err
	}
	began := time.Now()
	stop := e.runAgent(db, nil)
	defer stop()
	// The backlog's groups each run one long task and keep the rest waiting: left = backlog.
	if _, err := e.waitEnded(ctx, db, backlog, 30*time.Minute); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(began).Seconds(), nil
}
