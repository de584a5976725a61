package sqlschema

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Job is one job as the pgj_jobs view shows it to the caller.
type Job struct {
	Name          string         `json:"name"`
	Function      string         `json:"function"` // the function call, such as public.off_line()
	Owner         string         `json:"owner"`
	Startup       bool           `json:"startup"`
	StartSchedule *string        `json:"start_schedule"` // nil when the job has none
	Recurrences   []string       `json:"recurrences"`    // "Name (definition)", by schedule name
	NextRun       *time.Time     `json:"next_run"`       // nil until the agent plans a run, and while paused
	LastRun       *time.Time     `json:"last_run"`
	LastStatus    *string        `json:"last_status"`
	Paused        bool           `json:"paused"`
	Timeout       *time.Duration `json:"timeout_seconds"` // the time limit of a run, nil when none
}

// MarshalJSON writes the time limit in seconds.
func (j Job) MarshalJSON() ([]byte, error) {
	type plain Job
	out := struct {
		plain
		Timeout *float64 `json:"timeout_seconds"`
	}{plain: plain(j)}
	if j.Timeout != nil {
		seconds := j.Timeout.Seconds()
		out.Timeout = &seconds
	}
	return json.Marshal(out)
}

// RunRow is one run as the pgj_runs view shows it to the caller.
type RunRow struct {
	Job       string         `json:"job"`
	Owner     string         `json:"owner"`
	Scheduled *time.Time     `json:"scheduled"` // nil for a startup run or one started by hand
	Started   *time.Time     `json:"started"`   // nil for skipped and missed fires
	Finished  *time.Time     `json:"finished"`
	Duration  *time.Duration `json:"-"`
	Status    string         `json:"status"`
	SQLState  *string        `json:"sqlstate"`
	Message   *string        `json:"message"`
	Detail    *string        `json:"detail"`
	Hint      *string        `json:"hint"`
	Context   *string        `json:"context"`
	Agent     *string        `json:"agent"`
	Request   *int64         `json:"request"` // the request of a run started by hand (pgjobs run); nil otherwise
}

// MarshalJSON writes the duration in seconds.
func (r RunRow) MarshalJSON() ([]byte, error) {
	type plain RunRow
	out := struct {
		plain
		Duration *float64 `json:"duration_seconds"`
	}{plain: plain(r)}
	if r.Duration != nil {
		seconds := r.Duration.Seconds()
		out.Duration = &seconds
	}
	return json.Marshal(out)
}

// RunFilter says which runs RunList returns.
type RunFilter struct {
	Job    *string // one job's, or all
	Failed bool    // only error, cancelled, abandoned and missed
	Since  *string // an interval: only runs of that long ago or later
	Limit  int     // at most this many, the latest
}

// RunList returns the runs the connected role may see, latest first.
func RunList(ctx context.Context, q Queryer, f RunFilter) ([]RunRow, error) {
	rows, err := q.Query(ctx, query("run_list"), f.Job, f.Failed, f.Since, f.Limit)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	runs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (RunRow, error) {
		var r RunRow
		err := row.Scan(&r.Job, &r.Owner, &r.Scheduled, &r.Started, &r.Finished, &r.Duration, &r.Status, &r.SQLState, &r.Message, &r.Detail, &r.Hint, &r.Context, &r.Agent, &r.Request)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
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
		err := row.Scan(&j.Name, &j.Function, &j.Owner, &j.Startup, &j.StartSchedule, &j.Recurrences, &j.NextRun, &j.LastRun, &j.LastStatus, &j.Paused, &j.Timeout)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return jobs, nil
}
