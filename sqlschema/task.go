package sqlschema

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// The task service's operations on the task table (docs/tasks.md). Each takes the leader epoch and
// fails with ErrLostLead when another agent holds the lease.

// TaskFormat is how a task's output is written (the table's header ... null columns).
type TaskFormat struct {
	Header, String           bool
	Delimiter, Escape, Quote string // one character each, or "" for none
	Null                     string
}

// ClaimedTask is a task claimed to run, with what running and ending it needs.
type ClaimedTask struct {
	ID         int64
	Attempt    int
	Owner      uint32  // the owner's role OID
	OwnerName  *string // the owner's name now; nil when the role was dropped
	OwnerSuper bool
	OwnerLogin bool // the owner may log in and has not expired
	Input      string
	Timeout    time.Duration
	Plan       time.Time
	Repeat     pgtype.Interval
	Drift      bool
	Max        int
	Retries    int
	RetryDelay time.Duration
	Save       bool
	Format     TaskFormat
	Remote     *string
	Count      int           // a session that ran this many tasks is closed after it (0: no limit)
	Live       time.Duration // a session older than this is closed after it (0: no limit)
	Origin     time.Time     // the first plan of a repeating task's rows: the grid of the next plans
	Expires    *time.Time    // a one-shot task not started by then goes GONE instead (nil: never)
}

// lostLead is the SQLSTATE of the task functions when their epoch no longer holds the lease.
const lostLead = "PGJ01"

// taskErr wraps err as what the task operation did, and as ErrLostLead when that was the cause.
func taskErr(what string, err error) error {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == lostLead {
		return fmt.Errorf("%s: %w", what, ErrLostLead)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// TaskClaim ends the one-shot tasks that waited too long (GONE) and claims up to slots ready ones,
// the roles taking turns and none holding more than ownerCap tasks claimed or running at once, not
// counting the tasks ended whose end the agent has yet to write.
func TaskClaim(ctx context.Context, q DB, epoch int64, slots, ownerCap int, ended []int64) ([]ClaimedTask, error) {
	if ended == nil {
		ended = []int64{}
	}
	rows, err := q.Query(ctx, query("task_claim"), epoch, slots, ownerCap, ended)
	if err != nil {
		return nil, taskErr("claim tasks", err)
	}
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (ClaimedTask, error) {
		var t ClaimedTask
		return t, scanClaimed(row, &t)
	})
	if err != nil {
		return nil, taskErr("claim tasks", err)
	}
	return tasks, nil
}

// scanClaimed scans the columns of pgj_task_claim_ into t, and then into extra.
func scanClaimed(row pgx.Row, t *ClaimedTask, extra ...any) error {
	var timeout, delay, live pgtype.Interval
	err := row.Scan(append([]any{&t.ID, &t.Attempt, &t.Owner, &t.OwnerName, &t.OwnerSuper, &t.OwnerLogin, &t.Input, &timeout, &t.Plan,
		&t.Repeat, &t.Drift, &t.Max, &t.Retries, &delay, &t.Save, &t.Format.Header, &t.Format.String,
		&t.Format.Delimiter, &t.Format.Escape, &t.Format.Quote, &t.Format.Null, &t.Remote, &t.Count, &live, &t.Origin, &t.Expires}, extra...)...)
	t.Timeout, t.RetryDelay, t.Live = IntervalDuration(timeout), IntervalDuration(delay), IntervalDuration(live)
	return err
}

// AdoptedTask is a task an agent gone left claimed or running whose input committed: it is ended,
// not run again.
type AdoptedTask struct {
	ClaimedTask
	Start *time.Time // when it started, if the agent gone wrote it
}

// TaskAdopt returns the tasks left claimed or running by an agent that died or lost the lead (not
// mine) whose input committed its proof, and whose session has ended.
func TaskAdopt(ctx context.Context, q DB, epoch int64, mine []int64) ([]AdoptedTask, error) {
	if mine == nil {
		mine = []int64{}
	}
	rows, err := q.Query(ctx, query("task_adopt"), epoch, mine)
	if err != nil {
		return nil, taskErr("look for the committed tasks of an agent gone", err)
	}
	tasks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (AdoptedTask, error) {
		var t AdoptedTask
		return t, scanClaimed(row, &t.ClaimedTask, &t.Start)
	})
	if err != nil {
		return nil, taskErr("look for the committed tasks of an agent gone", err)
	}
	return tasks, nil
}

// TaskKey records key, 32 random bytes, as the key of the term of epoch: the proofs of the tasks
// the term runs carry tokens derived from it (TaskProofSQL).
func TaskKey(ctx context.Context, q DB, epoch int64, key []byte) error {
	if _, err := q.Exec(ctx, query("task_key"), epoch, key); err != nil {
		return taskErr("record the term's key for the tasks' proofs", err)
	}
	return nil
}

// TaskProofSQL is what the agent appends to the input of attempt attempt of task id, run in the
// term of epoch whose key is key, on the session of backend pid: the statement that records, in
// the input's transaction, that the attempt ran. It starts with a line break and a semicolon,
// which end whatever the input left open. Its result is the one column pgj_task_proof_, of type
// void.
func TaskProofSQL(epoch, id int64, attempt int, pid uint32, key []byte) string {
	msg := make([]byte, 0, len(key)+16)
	msg = append(msg, key...)
	msg = binary.BigEndian.AppendUint64(msg, uint64(id))
	msg = binary.BigEndian.AppendUint32(msg, uint32(attempt))
	msg = binary.BigEndian.AppendUint32(msg, pid)
	token := sha256.Sum256(msg)
	var call strings.Builder
	call.WriteString("\n;")
	for _, line := range strings.Split(query("task_proof"), "\n") {
		if line != "" && !strings.HasPrefix(line, "--") {
			call.WriteString(line)
		}
	}
	return fmt.Sprintf(call.String(), epoch, id, attempt, hex.EncodeToString(token[:]))
}

// IntervalDuration returns an interval as a duration, a day counting 24 hours and a month 30 days.
func IntervalDuration(i pgtype.Interval) time.Duration {
	const day = 24 * time.Hour
	return time.Duration(i.Microseconds)*time.Microsecond + time.Duration(i.Days)*day + time.Duration(i.Months)*30*day
}

// TaskStarted is a claimed task that started on a session.
type TaskStarted struct {
	ID      int64
	Attempt int
	PID     uint32 // the session's backend
	Start   time.Time
}

// TaskEnd is how an attempt of a task ended.
type TaskEnd struct {
	ID          int64
	Attempt     int
	Start, Stop time.Time
	Output      *string
	Error       *string    // nil: DONE
	RetryAt     *time.Time // not nil: back to PLAN at that time, for another attempt
	NextPlan    *time.Time // a repeating task's next row
	SpaceAt     *time.Time // a negative-max group's next task no earlier than this
	Gone        bool       // not started before its expiry: GONE, not run
}

// TaskWrite writes, in one transaction, the tasks that started (WORK) and then the ends, each end
// with its repeat row, delete and re-planning. An end whose row another session holds locked is
// not written but returned in busy, to be written later; an end whose row is no longer in that
// attempt (reset meanwhile) is dropped.
func TaskWrite(ctx context.Context, db DB, epoch int64, started []TaskStarted, ends []TaskEnd) (busy []TaskEnd, err error) {
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		busy = nil
		batch := &pgx.Batch{}
		if len(started) > 0 {
			ids, attempts, pids, starts := make([]int64, len(started)), make([]int32, len(started)), make([]int32, len(started)), make([]time.Time, len(started))
			for i, s := range started {
				ids[i], attempts[i], pids[i], starts[i] = s.ID, int32(s.Attempt), int32(s.PID), s.Start
			}
			batch.Queue(query("task_work"), epoch, ids, attempts, pids, starts)
		}
		if len(ends) > 0 {
			n := len(ends)
			ids, attempts := make([]int64, n), make([]int32, n)
			starts, stops := make([]time.Time, n), make([]time.Time, n)
			outputs, errs := make([]*string, n), make([]*string, n)
			retries, nexts, spaces := make([]*time.Time, n), make([]*time.Time, n), make([]*time.Time, n)
			gones := make([]bool, n)
			for i, e := range ends {
				ids[i], attempts[i], starts[i], stops[i] = e.ID, int32(e.Attempt), e.Start, e.Stop
				outputs[i], errs[i], retries[i], nexts[i], spaces[i], gones[i] = e.Output, e.Error, e.RetryAt, e.NextPlan, e.SpaceAt, e.Gone
			}
			batch.Queue(query("task_ends"), epoch, ids, attempts, starts, stops, outputs, errs, retries, nexts, spaces, gones).
				Query(func(rows pgx.Rows) error {
					var id int64
					var attempt int
					var written *bool
					_, err := pgx.ForEachRow(rows, []any{&id, &attempt, &written}, func() error {
						if written == nil {
							for _, e := range ends {
								if e.ID == id && e.Attempt == attempt {
									busy = append(busy, e)
								}
							}
						}
						return nil
					})
					return err
				})
		}
		return tx.SendBatch(ctx, batch).Close()
	})
	if err != nil {
		return nil, taskErr("write the tasks' results", err)
	}
	return busy, nil
}

// TaskReset puts back to PLAN the tasks left claimed or running by an agent that died or lost the
// lead, but not mine (the runs of this agent), and returns how many, and how many such tasks still
// run on a session of their own, to be reset once it ends.
func TaskReset(ctx context.Context, q DB, epoch int64, mine []int64) (reset, running int, err error) {
	if mine == nil {
		mine = []int64{}
	}
	if err := q.QueryRow(ctx, query("task_reset"), epoch, mine).Scan(&reset, &running); err != nil {
		return 0, 0, taskErr("reset the tasks of an agent gone", err)
	}
	return reset, running, nil
}

// TaskNext returns the server's time, the next future plan, and the first moment a ready one-shot
// task expires (nil when none): a notification or the end of a run makes tasks ready otherwise.
func TaskNext(ctx context.Context, q DB) (now time.Time, plan, expiry *time.Time, err error) {
	var p, e pgtype.Timestamptz // an infinite time is no time to wake up at
	if err := q.QueryRow(ctx, query("task_next")).Scan(&now, &p, &e); err != nil {
		return time.Time{}, nil, nil, fmt.Errorf("look for the next task: %w", err)
	}
	if p.Valid && p.InfinityModifier == pgtype.Finite {
		plan = &p.Time
	}
	if e.Valid && e.InfinityModifier == pgtype.Finite {
		expiry = &e.Time
	}
	return now, plan, expiry, nil
}

// TaskPrune deletes the ended tasks older than the task_retention setting, PruneBatch at a time,
// and returns how many.
func TaskPrune(ctx context.Context, q DB) (int64, error) {
	var deleted int64
	for {
		var n int64
		if err := q.QueryRow(ctx, query("task_prune"), PruneBatch).Scan(&n); err != nil {
			return deleted, fmt.Errorf("delete old tasks (%d deleted before): %w", deleted, err)
		}
		deleted += n
		if n < PruneBatch {
			return deleted, nil
		}
	}
}

// TaskBeginSQL is the guard query sent before the input of task id of role OID owner, setting a
// statement_timeout of timeout (the role's own when 0): the input is sent only if it succeeds,
// which it does only on a session of that role.
func TaskBeginSQL(id int64, owner uint32, timeout time.Duration) string {
	ms := timeout.Milliseconds()
	if timeout > 0 && ms == 0 {
		ms = 1
	}
	return fmt.Sprintf(query("task_begin"), id, owner, ms)
}
