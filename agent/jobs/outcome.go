package jobs

// How a run ended, described for the run history and the log: its failure, a refusal to run it,
// a run that could not start before the next fire.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/authwatch"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// logResult logs how a run ended: done at level 2, failed or cancelled at level 1.
func (s *Service) logResult(j *job, result sqlschema.RunResult) {
	switch result.Status {
	case sqlschema.RunOK:
		s.logf(agentlog.LevelInfo, agentlog.StatusFiring, "job %s done", j.ref())
	default:
		msg := result.Message
		if result.Hint != "" {
			msg += " (hint: " + result.Hint + ")"
		}
		s.logf(agentlog.LevelEssential, agentlog.StatusFiring, "job %s %s: %s", j.ref(), map[sqlschema.RunStatus]string{sqlschema.RunError: "failed", sqlschema.RunCancelled: "cancelled"}[result.Status], msg)
	}
}

// refusal returns why a job must not run at all, and how to set it right, or "" when it may: its
// owner was dropped, or its call has no function OID (a call of schema version 1 that could not
// be resolved again, or one that an upgrade stopped), or does not name its function as stored
// calls do.
func refusal(j *job) (why, hint string) {
	switch {
	case j.ownerGone:
		return fmt.Sprintf("the job's owner %s (role OID %d) was dropped: the job does not run", j.owner, j.ownerID),
			fmt.Sprintf("a superuser may drop the job: SELECT pgjobs.pgj_drop_job(%s)", sqlLiteral(j.name))
	case j.funcOID == 0:
		return fmt.Sprintf("the job's call %s was stopped by a pgjobs upgrade (pgjobs updatesystem said why) or, stored by an older pgjobs, could not be resolved for its owner %s: the job does not run", j.call, j.owner),
			fmt.Sprintf("its owner %s sets the call again: SELECT pgjobs.pgj_update_job(%s, NULL, %s, NULL)", j.owner, sqlLiteral(j.name), sqlLiteral(j.call))
	case j.callErr != nil:
		return fmt.Sprintf("%v: the job does not run", j.callErr),
			fmt.Sprintf("its owner %s sets the call again: SELECT pgjobs.pgj_update_job(%s, NULL, %s, NULL)", j.owner, sqlLiteral(j.name), sqlLiteral(j.call))
	}
	return "", ""
}

// sqlLiteral quotes s as an SQL string literal (standard_conforming_strings on).
func sqlLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// failure describes a run that failed with err: PostgreSQL's message, SQLSTATE, DETAIL, HINT and
// CONTEXT, or, when the run could not start, why and how to set it right.
func (s *Service) failure(j *job, err error) sqlschema.RunResult {
	result := sqlschema.RunResult{Finished: s.cfg.Clock.Now(), Status: sqlschema.RunError, Message: err.Error()}
	var pgErr *pgconn.PgError
	isPg := errors.As(err, &pgErr)
	if isPg {
		result.SQLState, result.Detail, result.Hint, result.Context = pgErr.Code, pgErr.Detail, pgErr.Hint, pgErr.Where
	}
	var connectErr *pgconn.ConnectError
	var tooLong *pgproto3.ExceededMaxBodyLenErr
	var iterations *authwatch.IterationsError
	switch {
	case errors.As(err, &iterations):
		result.SQLState, result.Detail, result.Context = authwatch.SQLState(err), "", ""
		result.Message = fmt.Sprintf("cannot connect as role %s to run the job: the password verifier of %s asks for %d SCRAM iterations to log in, more than the %d the agent computes: the agent ended the login before computing it", j.owner, j.owner, iterations.Iterations, iterations.Max)
		result.Hint = fmt.Sprintf("set the password of %s again at the server's scram_iterations (ALTER ROLE %s PASSWORD ...), or raise scram_iterations in pgjobs.conf", j.owner, pgx.Identifier{j.owner}.Sanitize())
	case authwatch.Refused(err):
		result.SQLState, result.Detail, result.Hint, result.Context = authwatch.SQLState(err), "", "", ""
		result.Message = fmt.Sprintf("cannot connect as role %s to run the job: %v", j.owner, err)
	case errors.As(err, &tooLong):
		result.Message = fmt.Sprintf("the run sent back a message of %d bytes (an error, a notice or a row), over the agent's limit of %d: the agent read no further and closed the session", tooLong.ActualBodyLen, tooLong.MaxExpectedBodyLen)
		result.Hint = "keep a job's errors and notices short"
	case s.runCtx.Err() != nil:
		result.Message = "cancelled: the agent stopped before the run finished"
		result.Status = sqlschema.RunCancelled
	case errors.As(err, &connectErr):
		if isPg && strings.Contains(pgErr.Message, "not permitted to log in") {
			result.Message = fmt.Sprintf("the job's owner %s may no longer log in: the job does not run", j.owner)
			result.Hint = fmt.Sprintf("ALTER ROLE %s LOGIN lets it run again", pgx.Identifier{j.owner}.Sanitize())
		} else {
			result.Message = fmt.Sprintf("cannot connect as role %s to run the job: %v", j.owner, err)
			result.Hint = fmt.Sprintf("let the agent's OS user authenticate as %s: a pg_hba.conf rule for it, or a ~/.pgpass line for it", j.owner)
			if errors.Is(err, context.DeadlineExceeded) {
				result.Hint = fmt.Sprintf("the login as %s did not end in time: the server, or the agent's machine, was busy", j.owner)
			}
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

// notStarted describes a run that waited for a session until its job's next fire.
func (s *Service) notStarted(err error) sqlschema.RunResult {
	size, fixed := s.cfg.Budget.Size()
	result := sqlschema.RunResult{Status: sqlschema.RunError, SQLState: "53300",
		Message: fmt.Sprintf("the run could not start before the job's next fire: no session was free within the agent's budget of %d sessions on this server (%d of them the agents' own)", size, fixed),
		Hint:    "the sessions configuration setting raises the budget; fewer jobs due at one minute, or shorter runs, free sessions sooner"}
	if sessions.Refused(err) || !errors.Is(err, errNextFire) {
		// The server refused the sessions it tried (its connection slots taken by other clients, or
		// a role's or the database's connection limit reached), whatever the budget allowed.
		result.Message = "the run could not start before the job's next fire: " + err.Error()
		result.Hint = "the server's max_connections is taken by other clients, or a connection limit of the role or the database is reached; raise it, or lower their use"
	}
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
