package sqlschema

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// TaskGroupCount is the number of tasks of one group in one state.
type TaskGroupCount struct {
	Group, State string
	Count        int64
}

// TaskGroupCounts returns the tasks of the database by group and state, and the age of the oldest task
// that is due and not started (0 when none): what the metrics read at scrape time.
//
// It waits at most 200 ms for a lock and reads for at most 2 s: a role's transaction, or a DDL
// queued behind it, delays a scrape by no more than that, and holds none of the agent's sessions
// longer.
func TaskGroupCounts(ctx context.Context, q DB) ([]TaskGroupCount, time.Duration, error) {
	tx, err := q.Begin(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("count the tasks: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '200ms'; SET LOCAL statement_timeout = '2s'"); err != nil {
		return nil, 0, fmt.Errorf("count the tasks: %w", err)
	}
	rows, err := tx.Query(ctx, query("task_counts"))
	if err != nil {
		return nil, 0, fmt.Errorf("count the tasks: %w", err)
	}
	var oldest float64
	counts, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TaskGroupCount, error) {
		var c TaskGroupCount
		var age float64
		err := row.Scan(&c.Group, &c.State, &c.Count, &age)
		oldest = max(oldest, age)
		return c, err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("count the tasks: %w", err)
	}
	return counts, time.Duration(oldest * float64(time.Second)), nil
}
