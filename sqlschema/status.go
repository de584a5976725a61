package sqlschema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// What pgjobs status reads of a database, in one read-only snapshot.

// RunWindow is how far back Status counts runs: the runs that ended in the last 24 hours.
const RunWindow = 24 * time.Hour

// FailureWindow is how far back Status counts the failures that make pgjobs status exit 1.
const FailureWindow = time.Hour

// leaseSessionSince is the schema version whose lease records the leader's session.
const leaseSessionSince = 3

// taskSince is the schema version that added the task table.
const taskSince = 5

// Status is the state of pgjobs in a database as one snapshot saw it. The jobs, runs and tasks are
// those the connected role may see: all of them for a superuser, its own for another role.
type Status struct {
	Enabled   bool      // the database has a pgjobs schema; when false, nothing else is read
	Version   int       // the installed schema version
	Role      string    // the role that read it
	Superuser bool      // Role is a superuser
	Now       time.Time // the server's clock at the snapshot, which ages are counted from

	Leader   LeaderStatus
	Standbys StandbyStatus

	Jobs       int        // the jobs Role may see
	PausedJobs int        // of them, the paused ones (always 0 before schema version 3)
	NextJob    *string    // the job that fires next; nil when none is planned
	NextOwner  *string    // its owner
	NextFire   *time.Time // and when

	Runs        RunCounts
	LastFailure *RunFailure // the latest failed, cancelled or abandoned run, however old; nil when none

	Tasks *TaskCounts // nil before schema version 5, which has no tasks
}

// LeaderStatus is the leader lease, pgjobs.pgj_leader_, which tells the active agent.
type LeaderStatus struct {
	// Readable is false when the role may not read the lease (it is hidden from PUBLIC: superusers
	// and the agents' roles may); then nothing else is known.
	Readable bool
	// Tracked is false before schema version 3, whose lease does not record the leader's
	// session: whether an agent leads cannot be read.
	Tracked bool
	Agent   *string    // the agent that took the lease last, nil when none ever did
	Since   *time.Time // when it took it
	PID     *int       // the leader session's backend pid; nil once the agent gave the lease up
	Started *time.Time // that session's backend_start
	Active  bool       // that session is connected to the database: Agent leads it
}

// StandbyStatus is the standby agents: sessions of agents other than the leader's that wait to
// take over.
type StandbyStatus struct {
	Count  int
	Hidden int // agents' sessions of other roles whose statements the role may not see; when > 0, Count is a lower bound
}

// RunCounts are the runs that ended in the last RunWindow, by status, and more.
type RunCounts struct {
	OK, Error, Cancelled, Abandoned, Skipped, Missed int
	FailuresLastHour                                 int // error, cancelled and abandoned runs that ended in the last FailureWindow
	Running                                          int // runs going on now
}

// Failures returns the runs of the window that failed: error, cancelled and abandoned.
func (r RunCounts) Failures() int { return r.Error + r.Cancelled + r.Abandoned }

// RunFailure is a failed, cancelled or abandoned run.
type RunFailure struct {
	Job      string
	Owner    string // the job's owner
	Status   string
	Finished *time.Time
	SQLState *string
	Message  *string
}

// TaskStates are the states of a task, in the order a task goes through them.
var TaskStates = []string{"PLAN", "TAKE", "WORK", "DONE", "FAIL", "STOP", "GONE"}

// TaskCounts are the tasks by state (the keys of TaskStates), the waiting ones (PLAN, due) and the
// plan of the oldest that waits (nil when none waits).
type TaskCounts struct {
	ByState       map[string]int
	Waiting       int
	OldestWaiting *time.Time
}

// StatusRead reads the status of pgjobs in a database, in a read-only transaction of its own. A
// database without a pgjobs schema gives a Status with Enabled false and no error. A schema of
// another version than this program's is read as far as it can be: a version without tasks has
// Tasks nil, one whose lease has no session has Leader.Tracked false.
func StatusRead(ctx context.Context, q DB) (Status, error) {
	var s Status
	err := pgx.BeginFunc(ctx, q, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, query("status_begin")); err != nil {
			return fmt.Errorf("begin a read-only snapshot: %w", err)
		}
		v, err := Installed(ctx, tx)
		if errors.Is(err, ErrNotEnabled) {
			return nil
		}
		if err != nil {
			return err
		}
		s.Enabled, s.Version = true, v
		if err := tx.QueryRow(ctx, query("status_session")).Scan(&s.Role, &s.Superuser, &s.Leader.Readable, &s.Now); err != nil {
			return fmt.Errorf("read the session's role: %w", err)
		}
		if err := statusLeader(ctx, tx, &s); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, query("status_jobs")).Scan(&s.Jobs, &s.PausedJobs, &s.NextJob, &s.NextOwner, &s.NextFire); err != nil {
			return fmt.Errorf("read the jobs: %w", err)
		}
		r := &s.Runs
		if err := tx.QueryRow(ctx, query("status_runs"), RunWindow, FailureWindow).Scan(&r.OK, &r.Error, &r.Cancelled, &r.Abandoned, &r.Skipped, &r.Missed, &r.FailuresLastHour, &r.Running); err != nil {
			return fmt.Errorf("count the runs: %w", err)
		}
		var f RunFailure
		switch err := tx.QueryRow(ctx, query("status_last_failure")).Scan(&f.Job, &f.Owner, &f.Status, &f.Finished, &f.SQLState, &f.Message); {
		case errors.Is(err, pgx.ErrNoRows):
		case err != nil:
			return fmt.Errorf("read the last failure: %w", err)
		default:
			s.LastFailure = &f
		}
		if v >= taskSince {
			t, err := statusTasks(ctx, tx)
			if err != nil {
				return err
			}
			s.Tasks = &t
		}
		return nil
	})
	if err != nil {
		return Status{}, fmt.Errorf("read the pgjobs status: %w", err)
	}
	return s, nil
}

// statusLeader reads the lease and the standbys into s.
func statusLeader(ctx context.Context, tx pgx.Tx, s *Status) error {
	l := &s.Leader
	switch {
	case l.Readable && s.Version >= leaseSessionSince:
		l.Tracked = true
		if err := tx.QueryRow(ctx, query("status_leader")).Scan(&l.Agent, &l.Since, &l.PID, &l.Started, &l.Active); err != nil {
			return fmt.Errorf("read the leader lease: %w", err)
		}
	case l.Readable:
		if err := tx.QueryRow(ctx, query("status_leader_v1")).Scan(&l.Agent, &l.Since); err != nil {
			return fmt.Errorf("read the leader lease: %w", err)
		}
	}
	var leader *int
	if l.Active {
		leader = l.PID
	}
	if err := tx.QueryRow(ctx, query("status_standbys"), leader).Scan(&s.Standbys.Count, &s.Standbys.Hidden); err != nil {
		return fmt.Errorf("count the standby agents: %w", err)
	}
	return nil
}

// statusTasks counts the tasks.
func statusTasks(ctx context.Context, tx pgx.Tx) (TaskCounts, error) {
	n := make([]int, len(TaskStates))
	t := TaskCounts{ByState: make(map[string]int, len(TaskStates))}
	dest := make([]any, 0, len(n)+2)
	for i := range n {
		dest = append(dest, &n[i])
	}
	if err := tx.QueryRow(ctx, query("status_tasks")).Scan(append(dest, &t.Waiting, &t.OldestWaiting)...); err != nil {
		return TaskCounts{}, fmt.Errorf("count the tasks: %w", err)
	}
	for i, state := range TaskStates {
		t.ByState[state] = n[i]
	}
	return t, nil
}
