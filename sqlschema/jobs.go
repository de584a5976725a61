package sqlschema

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Job is one job as the pgj_jobs view shows it to the caller.
type Job struct {
	Name          string
	Function      string // the function call, such as off_line()
	Startup       bool
	StartSchedule *string    // nil when the job has none
	Recurrences   []string   // "Name (definition)", by schedule name
	NextRun       *time.Time // nil until the agent plans a run
	LastRun       *time.Time
	LastStatus    *string
}

// Queryer runs queries; a *pgx.Conn or a pgx.Tx.
type Queryer interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// JobList returns the jobs the connected role may see, by name.
func JobList(ctx context.Context, q Queryer) ([]Job, error) {
	rows, err := q.Query(ctx, query("job_list"))
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Job, error) {
		var j Job
		err := row.Scan(&j.Name, &j.Function, &j.Startup, &j.StartSchedule, &j.Recurrences, &j.NextRun, &j.LastRun, &j.LastStatus)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}
