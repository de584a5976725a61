package sessions

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Statement is one statement of a run, sent with the extended query protocol: one statement a
// message, so that a text holding a second statement is a syntax error, never run.
type Statement struct {
	SQL  string
	Args [][]byte // the values of $1, $2, ... in text format
}

// Run runs stmts on the session as one transaction of their own, then gives the session back,
// reset, as Release does: the reset is sent behind the run in the same round trip, and runs after
// the run's transaction has ended, in a transaction of its own, exactly as if it were sent after
// the run's answer came back. It returns the first error of stmts; when one fails the server skips
// the rest. The rows stmts return are read and dropped, never held.
//
// ctx bounds the run; when it ends before the run does, the session is closed. The reset is bounded
// by resetTimeout once the run has ended. The session is kept for the next run of its owner only
// when the reset committed and left no transaction open; otherwise it is closed.
func (s *Session) Run(ctx context.Context, stmts []Statement) error {
	conn := s.Conn.PgConn()
	p := conn.StartPipeline(ctx)
	for _, st := range stmts {
		p.SendQueryParams(st.SQL, st.Args, nil, nil, nil)
	}
	p.SendPipelineSync()
	for _, st := range resetStatements {
		p.SendQueryParams(st, nil, nil, nil, nil)
	}
	runErr := p.Sync()
	resetErr := runErr
	if runErr == nil {
		runErr = readUntilSync(p)
		var pgErr *pgconn.PgError
		if runErr == nil || errors.As(runErr, &pgErr) {
			// The run's transaction has ended; what is left is the reset.
			if err := conn.Conn().SetDeadline(time.Now().Add(resetTimeout)); err != nil {
				resetErr = err
			} else {
				resetErr = readUntilSync(p)
			}
		} else {
			resetErr = runErr
		}
	}
	if err := p.Close(); err != nil && resetErr == nil {
		resetErr = err
	}
	if !conn.IsClosed() {
		if err := conn.Conn().SetDeadline(time.Time{}); err != nil && resetErr == nil {
			resetErr = err
		}
	}
	s.giveBackReset(resetErr)
	return runErr
}

// readUntilSync reads the results of a pipeline up to and including its next sync point, drops
// their rows, and returns the first error. An error that is not the server's (the connection
// broke, or the run's context ended) ends the reading, and the connection is closed; the server's
// error before it, such as the FATAL one that ended the session, is the one returned.
func readUntilSync(p *pgconn.Pipeline) error {
	var first error
	for {
		res, err := p.GetResults()
		if err != nil {
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) {
				if first != nil {
					return first // the server's FATAL error says why the connection then broke
				}
				return err
			}
			if first == nil {
				first = err
			}
			continue
		}
		switch r := res.(type) {
		case *pgconn.ResultReader:
			for r.NextRow() {
			}
			if _, err := r.Close(); err != nil && first == nil {
				first = err
			}
		case *pgconn.PipelineSync:
			return first
		case nil:
			if first == nil {
				first = errors.New("the server's answer to a run ended before its sync point")
			}
			return first
		}
	}
}

// resetStatements reset a session between runs: DISCARD ALL but its DISCARD PLANS, which would
// make every run plan its guard again: with DISCARD ALL after each, a short run costs the server
// nearly twice as much. A cached plan is planned again when what it depends on changes,
// search_path included; what survives is a date or time literal in a plan of the owner's own
// functions, read with the TimeZone or DateStyle of the run that planned it (the attacker review's
// finding: it gives a role nothing it could not do in one run). They run as one transaction.
var resetStatements = []string{
	"CLOSE ALL",
	"SET SESSION AUTHORIZATION DEFAULT",
	"RESET ALL",
	"DEALLOCATE ALL",
	"UNLISTEN *",
	"SELECT pg_catalog.pg_advisory_unlock_all()",
	"DISCARD TEMP",
	"DISCARD SEQUENCES",
}

// resetSQL is resetStatements as one query of the simple protocol: one transaction.
var resetSQL = strings.Join(resetStatements, "; ")

// resetTimeout bounds the reset of a session after its run.
const resetTimeout = 5 * time.Second
