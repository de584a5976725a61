package agent

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// fire starts a run of a job; scheduled is nil for a startup run. A fire while the job's previous
// run goes on is recorded as skipped; so is one that waits for a free run slot when the agent
// stops.
func (a *dbAgent) fire(stop context.Context, j *job, scheduled *time.Time) {
	a.runningMu.Lock()
	busy := a.running[j.id]
	a.running[j.id] = true
	a.runningMu.Unlock()
	a.runs.Add(1)
	if busy {
		go func() {
			defer a.runs.Done()
			if scheduled != nil {
				a.recordSkipped(j, *scheduled, "the previous run was still going")
			}
		}()
		return
	}
	go func() {
		defer a.runs.Done()
		defer func() {
			a.runningMu.Lock()
			delete(a.running, j.id)
			a.runningMu.Unlock()
		}()
		select {
		case a.slots <- struct{}{}:
		case <-stop.Done():
			if scheduled != nil {
				a.recordSkipped(j, *scheduled, "the agent stopped before a run slot was free")
			}
			return
		}
		var freed sync.Once
		free := func() { freed.Do(func() { <-a.slots }) }
		defer free()
		a.execute(j, scheduled, free)
	}()
}

// execute runs a job on a session of its owner and records the run. It calls free as soon as the
// run has ended, before the bookkeeping: a waiting run takes the slot at once.
func (a *dbAgent) execute(j *job, scheduled *time.Time, free func()) {
	records, err := a.recordsPool()
	if err != nil {
		a.logf(agentlog.LevelError, statusFiring, "job %s not run: %v", j.name, err)
		return
	}
	run := sqlschema.Run{JobID: j.id, JobName: j.name, Owner: j.owner, OwnerID: j.ownerID, Scheduled: scheduled,
		Agent: a.opt.Name, Started: a.opt.Clock.Now()}
	a.logf(agentlog.LevelInfo, statusFiring, "job %s started: SELECT %s as %s", j.name, j.call, j.owner)
	long := time.NewTimer(runningRowAfter) // real time: bookkeeping, not a schedule
	defer long.Stop()
	var result sqlschema.RunResult
	var conn *pgxpool.Conn
	if why, hint := refusal(j); why != "" {
		result = sqlschema.RunResult{Finished: a.opt.Clock.Now(), Status: "error", SQLState: "42501", Message: why, Hint: hint}
	} else if conn, err = a.acquire(j.owner); err != nil {
		result = a.failure(j, err)
	} else {
		pid := conn.Conn().PgConn().PID()
		run.Session = int(pid)
		if start, ok := a.sessions.Load(pid); ok {
			run.SessionStart = start.(time.Time)
		}
		results := make(chan sqlschema.RunResult, 1)
		go func() { results <- a.runOn(conn, j) }()
		select {
		case result = <-results:
		case <-long.C:
			runID, err := sqlschema.RunStart(a.runCtx, records, run)
			if err != nil {
				a.logf(agentlog.LevelError, statusFiring, "job %s: %v", j.name, err)
			}
			result = <-results
			free()
			a.logResult(j, result)
			a.finish(records, run, runID, result)
			return
		}
	}
	free()
	a.logResult(j, result)
	<-long.C // let the other runs of this minute start before the bookkeeping
	a.finish(records, run, 0, result)
}

// logResult logs how a run ended: done at level 2, failed or cancelled at level 1.
func (a *dbAgent) logResult(j *job, result sqlschema.RunResult) {
	switch result.Status {
	case "ok":
		a.logf(agentlog.LevelInfo, statusFiring, "job %s done", j.name)
	default:
		msg := result.Message
		if result.Hint != "" {
			msg += " (hint: " + result.Hint + ")"
		}
		a.logf(agentlog.LevelEssential, statusFiring, "job %s %s: %s", j.name, map[string]string{"error": "failed", "cancelled": "cancelled"}[result.Status], msg)
	}
}

// finish records how a run ended: the whole run when it has no row yet (runID 0).
func (a *dbAgent) finish(records *pgxpool.Pool, run sqlschema.Run, runID int64, result sqlschema.RunResult) {
	// Record the end even when the agent is stopping: a fresh context, bounded.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var err error
	if runID == 0 {
		err = sqlschema.RunInsert(ctx, records, run, result)
	} else {
		var recorded bool
		if recorded, err = sqlschema.RunFinish(ctx, records, runID, result); err == nil && !recorded {
			a.logf(agentlog.LevelError, statusFiring, "job %s ended %s, but its run had been marked abandoned meanwhile", run.JobName, result.Status)
		}
	}
	if err != nil {
		a.logf(agentlog.LevelError, statusFiring, "job %s: %v; recording it when the database is back", run.JobName, err)
		a.pendingMu.Lock()
		a.pending = append(a.pending, pendingFinish{run: run, runID: runID, result: result})
		a.pendingMu.Unlock()
	}
}

// runOn runs SELECT <call>, a transaction of its own, on an owner session, then resets the
// session (DISCARD ALL) so that no run sees another's settings, and gives it back.
func (a *dbAgent) runOn(conn *pgxpool.Conn, j *job) sqlschema.RunResult {
	err := a.runCall(conn, j)
	// The session is free again as soon as it is reset: a run waiting for one of this owner's
	// sessions takes it at once. DISCARD ALL is one short statement on this session only.
	a.runs.Add(1)
	go func() {
		defer a.runs.Done()
		resetCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := conn.Exec(resetCtx, "DISCARD ALL", pgx.QueryExecModeSimpleProtocol); err != nil {
			conn.Conn().Close(resetCtx) // the pool drops it
		}
		conn.Release()
	}()
	if err != nil {
		return a.failure(j, err)
	}
	return sqlschema.RunResult{Finished: a.opt.Clock.Now(), Status: "ok"}
}

// runCall sends, in one round trip and one transaction, the guard that checks the session is of
// the job's owner (still existing, allowed to log in, not expired) and then SELECT <call>, each
// with the extended query protocol: one statement per message, so a call that holds a second
// statement is a syntax error, never run. The server skips the call when the guard fails. The
// call's rows are read and dropped, never held.
func (a *dbAgent) runCall(conn *pgxpool.Conn, j *job) error {
	batch := &pgconn.Batch{}
	ctx := a.runCtx
	if j.timeout > 0 {
		// The job's time limit: the server's statement_timeout for the run's transaction, and the
		// run's context a second later in case the call lifted it.
		batch.ExecParams("SELECT pg_catalog.set_config('statement_timeout', $1, true)", [][]byte{[]byte(strconv.FormatInt(j.timeout.Milliseconds(), 10))}, nil, nil, nil)
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, j.timeout+time.Second)
		defer cancel()
	}
	batch.ExecParams(sqlschema.RunGuardSQL(), [][]byte{[]byte(strconv.FormatUint(uint64(j.ownerID), 10)), []byte(j.owner)}, nil, nil, nil)
	// IS NULL: the call's value stays in the server; a job returning 300 MB sends back a boolean.
	batch.ExecParams("SELECT ("+j.call+") IS NULL", nil, nil, nil, nil)
	results := conn.Conn().PgConn().ExecBatch(ctx, batch)
	var first error
	for results.NextResult() {
		rows := results.ResultReader()
		for rows.NextRow() {
		}
		if _, err := rows.Close(); err != nil && first == nil {
			first = err
		}
	}
	if err := results.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

// refusal returns why a job must not run at all, and how to set it right, or "" when it may: its
// owner was dropped, or its call is one of schema version 1 that could not be resolved again.
func refusal(j *job) (why, hint string) {
	switch {
	case j.ownerGone:
		return fmt.Sprintf("the job's owner %s (role OID %d) was dropped: the job does not run", j.owner, j.ownerID),
			fmt.Sprintf("a superuser may drop the job: SELECT pgjobs.pgj_drop_job(%s)", sqlLiteral(j.name))
	case !j.resolved:
		return fmt.Sprintf("the job's call %s was stored by an older pgjobs and could not be resolved for its owner %s: the job does not run", j.call, j.owner),
			fmt.Sprintf("its owner %s sets the call again: SELECT pgjobs.pgj_update_job(%s, NULL, %s, NULL)", j.owner, sqlLiteral(j.name), sqlLiteral(j.call))
	}
	return "", ""
}

// sqlLiteral quotes s as an SQL string literal (standard_conforming_strings on).
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// failure describes a run that failed with err: PostgreSQL's message, SQLSTATE, DETAIL, HINT and
// CONTEXT, or, when the run could not start, why and how to set it right.
func (a *dbAgent) failure(j *job, err error) sqlschema.RunResult {
	result := sqlschema.RunResult{Finished: a.opt.Clock.Now(), Status: "error", Message: err.Error()}
	var pgErr *pgconn.PgError
	isPg := errors.As(err, &pgErr)
	if isPg {
		result.SQLState, result.Detail, result.Hint, result.Context = pgErr.Code, pgErr.Detail, pgErr.Hint, pgErr.Where
	}
	var connectErr *pgconn.ConnectError
	switch {
	case a.runCtx.Err() != nil:
		result.Message = "cancelled: the agent stopped before the run finished"
		result.Status = "cancelled"
	case errors.As(err, &connectErr):
		if isPg && strings.Contains(pgErr.Message, "not permitted to log in") {
			result.Message = fmt.Sprintf("the job's owner %s may no longer log in: the job does not run", j.owner)
			result.Hint = fmt.Sprintf("ALTER ROLE %s LOGIN lets it run again", pgx.Identifier{j.owner}.Sanitize())
		} else {
			result.Message = fmt.Sprintf("cannot connect as role %s to run the job: %v", j.owner, err)
			result.Hint = fmt.Sprintf("let the agent's OS user authenticate as %s: a pg_hba.conf rule for it, or a ~/.pgpass line for it", j.owner)
		}
	case j.timeout > 0 && (isPg && pgErr.Code == "57014" && strings.Contains(pgErr.Message, "statement timeout") || errors.Is(err, context.DeadlineExceeded)):
		result.SQLState = "57014"
		result.Message = fmt.Sprintf("the run took longer than the job's time limit of %s and was cancelled", j.timeout)
		if result.Detail == "" {
			result.Detail = err.Error()
		}
		result.Hint = fmt.Sprintf("SELECT pgjobs.pgj_set_job_timeout(%s, interval '...') changes the limit; NULL removes it", sqlLiteral(j.name))
	case isPg:
		result.Message = pgErr.Message
		if pgErr.Code == "42704" && strings.Contains(pgErr.Message, "was dropped: the job does not run") {
			_, result.Hint = refusal(&job{name: j.name, ownerGone: true}) // the guard's hint names no job
		}
	}
	result.Message = clip(result.Message, maxMessage)
	result.Detail, result.Hint, result.Context = clip(result.Detail, maxMessage), clip(result.Hint, maxMessage), clip(result.Context, maxMessage)
	return result
}

// maxMessage is the most bytes of a failed run's message the agent logs and records: a job's
// error can be as long as it likes, the run history and the logs are not.
const maxMessage = 4096

// clip returns s cut to at most max bytes, on a character boundary, saying how long it was.
func clip(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes in all)", s[:cut], len(s))
}

// recordSkipped records a fire that did not run.
func (a *dbAgent) recordSkipped(j *job, at time.Time, why string) {
	a.logf(agentlog.LevelInfo, statusFiring, "job %s: fire of %s skipped: %s", j.name, at.Format(time.RFC3339), why)
	records, err := a.recordsPool()
	if err != nil {
		a.logf(agentlog.LevelError, statusFiring, "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := sqlschema.RunRecord(ctx, records, j.id, j.name, j.owner, j.ownerID, at, "skipped", why, a.opt.Name); err != nil {
		a.logf(agentlog.LevelError, statusFiring, "%v", err)
	}
}
