package sqlschema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// RequestRun asks the active agent to run the caller's job now (pgj_run_job) and returns the
// request's id; the request that waits already for that job, if any.
func RequestRun(ctx context.Context, q DB, job string) (int64, error) {
	var id int64
	if err := q.QueryRow(ctx, query("request_run"), job).Scan(&id); err != nil {
		return 0, fmt.Errorf("ask to run job %q now: %w", job, err)
	}
	return id, nil
}

// RequestState is where a request to run a job now stands.
type RequestState struct {
	Taken    *time.Time // when an agent took it; nil while it waits
	Refused  *string    // why the agent did not run the job, if it did not
	Status   *RunStatus // its run's status once recorded (RunRunning while it goes on)
	Started  *time.Time
	Finished *time.Time
	SQLState *string
	Message  *string
}

// Ended reports whether the request is answered: its run ended, or it was refused and no run of
// it is recorded (a run recorded after all wins over the refusal).
func (r RequestState) Ended() bool {
	if r.Status != nil {
		return *r.Status != RunRunning
	}
	return r.Refused != nil
}

// ErrRequestNotFound is RequestRead's error for a request the caller may not see, or none.
var ErrRequestNotFound = errors.New("no such request to run a job now, or not yours")

// RequestRead reads request id as the caller sees it.
func RequestRead(ctx context.Context, q DB, id int64) (RequestState, error) {
	var r RequestState
	err := q.QueryRow(ctx, query("request_read"), id).Scan(&r.Taken, &r.Refused, &r.Status, &r.Started, &r.Finished, &r.SQLState, &r.Message)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, fmt.Errorf("read request %d: %w", id, ErrRequestNotFound)
	}
	if err != nil {
		return r, fmt.Errorf("read request %d: %w", id, err)
	}
	return r, nil
}

// LeaderActive tells whether an agent leads the database; nil when the caller may not read the
// lease.
func LeaderActive(ctx context.Context, q DB) (*bool, error) {
	var readable bool
	if err := q.QueryRow(ctx, query("leader_readable")).Scan(&readable); err != nil {
		return nil, fmt.Errorf("read whether an agent leads: %w", err)
	}
	if !readable {
		return nil, nil
	}
	var active bool
	if err := q.QueryRow(ctx, query("leader_active")).Scan(&active); err != nil {
		return nil, fmt.Errorf("read whether an agent leads: %w", err)
	}
	return &active, nil
}

// RequestOrphans answers the requests an agent of an earlier lead took but left without a run
// recorded, for the lead of epoch, and returns how many; the requests of inFlight, whose runs
// the caller still has going, are left alone.
func RequestOrphans(ctx context.Context, q DB, epoch int64, inFlight []int64) (int64, error) {
	if inFlight == nil {
		inFlight = []int64{}
	}
	tag, err := q.Exec(ctx, query("request_orphans"), epoch, inFlight)
	if err != nil {
		return 0, fmt.Errorf("answer the requests to run a job now left by an earlier agent: %w", err)
	}
	return tag.RowsAffected(), nil
}
