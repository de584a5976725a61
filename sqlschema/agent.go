package sqlschema

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The agent's database operations. Their statements are prepared once per connection by pgx.

// RunGuardSQL is the statement sent on a run's session right before the call, in the same round
// trip: with the owner's role OID ($1) and name ($2), it fails unless the session is of that role,
// which still exists, may log in and has not expired; with the OID of the function the call was set
// to ($3), the schema and name the call gives ($4, $5) and whether it may be read as a cast ($6,
// see ParseStoredCall), it fails unless every function of that schema and name (and every type,
// for a cast) is the owner's, that function's owner's or a superuser's.
func RunGuardSQL() string { return query("run_guard") }

// RunGuardWarmSQL is what RunGuardWarm sends: both guards, the view guard last (it refuses there,
// for a view that is none, having run all the same).
func RunGuardWarmSQL() string { return query("run_guard_warm") }

// RunGuardWarm runs the guards of RunGuardSQL and RunViewGuardSQL once on a new owner session for
// the session's own role, so that its first run at a busy minute does not pay for compiling them.
// A refusal is no error here (each run asks again and records it); a failure of the session is.
func RunGuardWarm(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, RunGuardWarmSQL())
	var pgErr *pgconn.PgError
	if err != nil && !errors.As(err, &pgErr) {
		return fmt.Errorf("prepare the session's run guard: %w", err)
	}
	return nil
}

// StoredJob is a job as the agent loads it.
type StoredJob struct {
	ID            int
	Name          string
	Call          string  // schema-qualified as resolved when it was set
	OwnerID       uint32  // the owner's role OID
	Version       string  // the row's version (xmin) as loaded: a change makes another
	Owner         *string // the owner's role name now; nil when the role was dropped
	OwnerWas      string  // the owner's name when the job was made, for the record when the role is gone
	FuncOID       uint32  // the function the call was resolved to when it was set; 0 for a call of schema version 1 that could not be resolved again (it does not run), or when not read
	View          string  // the view the call is bound to (schema version 15), "" for a call set before
	Startup       bool
	StartSet      time.Time
	NextRun       *time.Time     // the fire planned before, as the agent recorded it
	StartSchedule *string        // canonical text, nil when none
	Schedules     []string       // canonical texts of the recurrences
	LastFire      *time.Time     // the latest fire claimed (run, skipped or missed), nil when none
	LastFireRun   bool           // whether LastFire has a run row
	Timeout       *time.Duration // the time limit of a run, nil when none
	Resumed       *time.Time     // when the job was last resumed: no fire before it runs or is missed
}

// JobLoad returns every job of the database that is not paused.
func JobLoad(ctx context.Context, q DB) ([]StoredJob, error) {
	rows, err := q.Query(ctx, query("job_load"))
	if err != nil {
		return nil, fmt.Errorf("load jobs: %w", err)
	}
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (StoredJob, error) {
		var j StoredJob
		err := row.Scan(&j.ID, &j.Name, &j.Call, &j.OwnerID, &j.Owner, &j.OwnerWas, &j.FuncOID, &j.Startup, &j.StartSet, &j.NextRun, &j.StartSchedule, &j.Schedules, &j.LastFire, &j.LastFireRun, &j.Timeout, &j.Resumed, &j.Version, &j.View)
		return j, err
	})
	if err != nil {
		return nil, fmt.Errorf("load jobs: %w", err)
	}
	return jobs, nil
}

// JobPlan records the next planned run of jobs; a nil time means none.
func JobPlan(ctx context.Context, q DB, ids []int, next []*time.Time) error {
	if _, err := q.Exec(ctx, query("job_plan"), ids, next); err != nil {
		return fmt.Errorf("record planned runs: %w", err)
	}
	return nil
}

// RunStart records that a run goes on and returns its id.
func RunStart(ctx context.Context, q DB, r Run) (int64, error) {
	var id int64
	if err := q.QueryRow(ctx, query("run_start"), r.JobID, r.JobName, r.Owner, r.Scheduled, r.Agent, r.Session, r.SessionStart, r.Started, r.OwnerID, nullIfZero(r.Request)).Scan(&id); err != nil {
		return 0, fmt.Errorf("record the start of job %s: %w", r.JobName, err)
	}
	return id, nil
}

// RunInsert records a whole run, started and ended, in one statement.
func RunInsert(ctx context.Context, q DB, r Run, result RunResult) error {
	if _, err := q.Exec(ctx, query("run_insert"), r.JobID, r.JobName, r.Owner, r.Scheduled, r.Agent, r.Session, r.SessionStart, r.Started,
		result.Finished, result.Status, nullIfEmpty(result.SQLState), nullIfEmpty(result.Message), r.OwnerID,
		nullIfEmpty(result.Detail), nullIfEmpty(result.Hint), nullIfEmpty(result.Context), nullIfZero(r.Request)); err != nil {
		return fmt.Errorf("record the run of job %s: %w", r.JobName, err)
	}
	return nil
}

// Run is one run of a job.
type Run struct {
	JobID        int
	JobName      string
	Owner        string     // the owner's role name
	OwnerID      uint32     // and OID
	Scheduled    *time.Time // the fire time; nil for a startup run
	Agent        string     // the agent process, such as "host pid 1234"
	Session      int        // the backend pid of the session the run runs on
	SessionStart time.Time  // that session's backend_start
	Started      time.Time
	Request      int64 // the request of a run started by hand (pgj_run_job); 0 for none
}

// SessionIdentity returns the backend pid and backend_start of a session: together they name it
// while it lives.
func SessionIdentity(ctx context.Context, q DB) (pid int, start time.Time, err error) {
	if err := q.QueryRow(ctx, query("session_start")).Scan(&pid, &start); err != nil {
		return 0, time.Time{}, fmt.Errorf("read the session's identity: %w", err)
	}
	return pid, start, nil
}

// RunResult is how a run ended.
type RunResult struct {
	Finished time.Time
	Status   RunStatus // RunOK, RunError or RunCancelled
	SQLState string    // "" when none
	Message  string    // "" when none
	Detail   string    // what PostgreSQL reported with the error, "" when none
	Hint     string    // the error's hint, or the agent's when it refused the run
	Context  string    // where the error happened (PL/pgSQL's CONTEXT)
}

// RunFinish records how a run ended. It reports false when the run was no longer "running":
// another agent marked it abandoned meanwhile.
func RunFinish(ctx context.Context, q DB, runID int64, r RunResult) (bool, error) {
	var n int
	if err := q.QueryRow(ctx, query("run_finish"), runID, r.Finished, r.Status, nullIfEmpty(r.SQLState), nullIfEmpty(r.Message),
		nullIfEmpty(r.Detail), nullIfEmpty(r.Hint), nullIfEmpty(r.Context)).Scan(&n); err != nil {
		return false, fmt.Errorf("record the end of run %d: %w", runID, err)
	}
	return n == 1, nil
}

// RunEnd is how a run ended, to record: the whole run when it has no row yet (RunID 0), else the
// end of its "running" row.
type RunEnd struct {
	Run    Run
	RunID  int64
	Result RunResult
}

// RunRecordEnds records the ends of runs in one transaction and one round trip, and reports for
// each whether it was recorded: false for a running row another agent had marked abandoned
// meanwhile. On an error nothing is recorded.
func RunRecordEnds(ctx context.Context, db DB, ends []RunEnd) ([]bool, error) {
	tx, err := db.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("record %d run ends: %w", len(ends), err)
	}
	defer tx.Rollback(ctx)
	// Written in the order of their job ids, as every statement of the agent that writes several
	// rows of pgj_fire_ does (see job_plan.sql), so that a batch never deadlocks with another.
	order := make([]int, len(ends))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ends[a].Run.JobID, ends[b].Run.JobID) })
	batch := &pgx.Batch{}
	for _, i := range order {
		e := ends[i]
		r, res := e.Run, e.Result
		if e.RunID == 0 {
			batch.Queue(query("run_insert"), r.JobID, r.JobName, r.Owner, r.Scheduled, r.Agent, r.Session, r.SessionStart, r.Started,
				res.Finished, res.Status, nullIfEmpty(res.SQLState), nullIfEmpty(res.Message), r.OwnerID,
				nullIfEmpty(res.Detail), nullIfEmpty(res.Hint), nullIfEmpty(res.Context), nullIfZero(r.Request))
		} else {
			batch.Queue(query("run_finish"), e.RunID, res.Finished, res.Status, nullIfEmpty(res.SQLState), nullIfEmpty(res.Message),
				nullIfEmpty(res.Detail), nullIfEmpty(res.Hint), nullIfEmpty(res.Context))
		}
	}
	results := tx.SendBatch(ctx, batch)
	recorded := make([]bool, len(ends))
	for _, i := range order {
		e := ends[i]
		if e.RunID == 0 {
			_, err = results.Exec()
			recorded[i] = err == nil
		} else {
			var n int
			err = results.QueryRow().Scan(&n)
			recorded[i] = n == 1
		}
		if err != nil {
			results.Close()
			return nil, fmt.Errorf("record the run of job %s: %w", e.Run.JobName, err)
		}
	}
	if err := results.Close(); err != nil {
		return nil, fmt.Errorf("record %d run ends: %w", len(ends), err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("record %d run ends: %w", len(ends), err)
	}
	return recorded, nil
}

// RunStatus is how a run went, as pgj_run_.runstatus has it.
type RunStatus string

// The statuses of runs.
const (
	RunRunning   RunStatus = "running"   // going on for longer than the agent waits before writing a row
	RunOK        RunStatus = "ok"        // ended without an error
	RunError     RunStatus = "error"     // failed, or could not start
	RunSkipped   RunStatus = "skipped"   // not run: the previous run was still going, or the agent stopped first
	RunMissed    RunStatus = "missed"    // not run: no agent could run it within late_limit
	RunCancelled RunStatus = "cancelled" // cancelled by a stop whose grace period ran out
	RunAbandoned RunStatus = "abandoned" // its session ended before its end was recorded
)

// Unrun is a fire that did not run, to record.
type Unrun struct {
	JobID     int
	JobName   string
	Owner     string // the owner's role name
	OwnerID   uint32 // and OID
	Scheduled time.Time
	Status    RunStatus // RunSkipped or RunMissed
	Message   string    // why
	Agent     string    // the agent process
}

// RunRecord records a fire that did not run.
func RunRecord(ctx context.Context, q DB, u Unrun) error {
	if _, err := q.Exec(ctx, query("run_record"), u.JobID, u.JobName, u.Owner, u.Scheduled, u.Status, u.Message, u.Agent, u.OwnerID); err != nil {
		return fmt.Errorf("record a %s run of job %s: %w", u.Status, u.JobName, err)
	}
	return nil
}

// RunAbandon marks abandoned the runs left running by agents whose session is gone, and returns
// the names of their jobs.
func RunAbandon(ctx context.Context, q DB) ([]string, error) {
	rows, err := q.Query(ctx, query("run_abandon"))
	if err != nil {
		return nil, fmt.Errorf("mark abandoned runs: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("mark abandoned runs: %w", err)
	}
	return names, nil
}

// RunForeignRunning returns the jobs of the runs of agents other than agent recorded as running.
func RunForeignRunning(ctx context.Context, q DB, agent string) ([]int, error) {
	rows, err := q.Query(ctx, query("run_foreign_running"), agent)
	if err != nil {
		return nil, fmt.Errorf("read the runs of other agents: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return nil, fmt.Errorf("read the runs of other agents: %w", err)
	}
	return ids, nil
}

// RunPrune deletes the runs older than the run_retention setting and returns how many: in batches
// of PruneBatch runs, a statement each, so that on a pool the session is free between them. It
// stops at the first error, or when ctx ends, with what it deleted by then.
func RunPrune(ctx context.Context, q DB) (int64, error) {
	if _, err := q.Exec(ctx, query("run_prune")); err != nil {
		return 0, fmt.Errorf("delete the state of dropped jobs and old caller stamps: %w", err)
	}
	var deleted int64
	for {
		tag, err := q.Exec(ctx, query("run_prune_batch"), PruneBatch)
		if err != nil {
			return deleted, fmt.Errorf("delete old runs (%d deleted before): %w", deleted, err)
		}
		deleted += tag.RowsAffected()
		if tag.RowsAffected() < PruneBatch {
			return deleted, nil
		}
	}
}

// PruneBatch is how many old runs one statement of RunPrune deletes at most.
const PruneBatch = 5000

func nullIfZero(n int64) *int64 {
	if n == 0 {
		return nil
	}
	return &n
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// SettingLateLimit returns the late_limit setting: how late an agent still runs a fire that fell
// due while no agent could run it.
func SettingLateLimit(ctx context.Context, q DB) (time.Duration, error) {
	var ms int64
	if err := q.QueryRow(ctx, query("setting_late_limit")).Scan(&ms); err != nil {
		return 0, fmt.Errorf("read the late_limit setting: %w", err)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// Request is a request to run a job now (pgj_run_job), taken by the agent.
type Request struct {
	ID      int64
	JobID   int
	JobName string // as it was when asked
}

// RequestTake takes, for the lead of epoch, at most max waiting requests to run a job now whose
// job is one of planned (job id: the row version loaded, StoredJob.Version) and still that
// version, oldest first, and answers those whose job was paused or dropped since; none when epoch
// no longer holds the lease. The request of a job changed since it was loaded waits for the take
// after the reload: its run takes the job as it is.
func RequestTake(ctx context.Context, q DB, epoch int64, planned map[int]string, max int) ([]Request, error) {
	ids, versions := make([]int, 0, len(planned)), make([]string, 0, len(planned))
	for id, v := range planned {
		ids, versions = append(ids, id), append(versions, v)
	}
	rows, err := q.Query(ctx, query("request_take"), epoch, ids, versions, max)
	if err != nil {
		return nil, fmt.Errorf("take the requests to run a job now: %w", err)
	}
	taken, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Request, error) {
		var r Request
		return r, row.Scan(&r.ID, &r.JobID, &r.JobName)
	})
	if err != nil {
		return nil, fmt.Errorf("take the requests to run a job now: %w", err)
	}
	slices.SortFunc(taken, func(a, b Request) int { return cmp.Compare(a.ID, b.ID) })
	return taken, nil
}

// RequestRefuse records why requests to run a job now did not run them: why[i] of ids[i].
func RequestRefuse(ctx context.Context, q DB, ids []int64, why []string) error {
	if _, err := q.Exec(ctx, query("request_refuse"), ids, why); err != nil {
		return fmt.Errorf("record why %d requests did not run their jobs: %w", len(ids), err)
	}
	return nil
}
