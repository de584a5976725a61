package sessions

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// Statement is one statement of a run, sent with the extended query protocol: one statement a
// message, so that a text holding a second statement is a syntax error, never run.
type Statement struct {
	SQL  string
	Args [][]byte // the values of $1, $2, ... in text format
}

// Run runs stmts on the session as one transaction of their own, then gives the session back,
// reset, as Release does: the reset is sent behind the run in the same round trip, as one query of
// the simple protocol (one message for its eight statements: it costs the server less than eight
// of the extended protocol), and runs after the run's transaction has ended, in a transaction of its
// own, exactly as if it were sent after the run's answer came back. It returns the first error of
// stmts; when one fails the server skips the rest. The rows stmts return are read and dropped,
// never held.
//
// ctx bounds the run; when it ends before the run does, the session is closed. The reset is bounded
// by resetTimeout once the run has ended. The session is kept for the next run of its owner only
// when the reset committed and left no transaction open; otherwise it is closed.
func (s *Session) Run(ctx context.Context, stmts []Statement) error {
	conn := s.Conn.PgConn()
	if err := ctx.Err(); err != nil {
		s.giveBackReset(err)
		return fmt.Errorf("the run was not sent: %w", err)
	}
	fe := conn.Frontend()
	for _, st := range stmts {
		// No Describe: the rows are dropped unread, so their description is not needed.
		fe.Send(&pgproto3.Parse{Query: st.SQL})
		fe.Send(&pgproto3.Bind{Parameters: st.Args})
		fe.Send(&pgproto3.Execute{})
	}
	fe.Send(&pgproto3.Sync{})
	fe.Send(&pgproto3.Query{String: resetSQL})
	// ctx ends the reading through the connection's deadline: one watch for the whole answer (a
	// watch for each message read costs the agent a third more CPU at a busy minute).
	var watching sync.Mutex
	read := false // the answer is read: ctx must no longer touch the connection
	stop := context.AfterFunc(ctx, func() {
		watching.Lock()
		defer watching.Unlock()
		if !read {
			conn.Conn().SetDeadline(time.Now()) //nolint:errcheck // a closed connection needs none
		}
	})
	// One write of a few hundred bytes but the call's text: the server reads it all before it sends
	// anything but a few bytes, so the write cannot wait on the server's answer.
	runErr := fe.Flush()
	if runErr != nil && ctx.Err() != nil {
		runErr = fmt.Errorf("%w (%w)", ctx.Err(), runErr)
	}
	resetErr := runErr
	answered := false // both ReadyForQuery were read: nothing of the answer is left to read
	if runErr == nil {
		var ready bool
		if ready, runErr = readUntilReady(ctx, conn); ready {
			// The run's transaction has ended; what is left is the reset, bounded by resetTimeout
			// unless ctx has ended already.
			watching.Lock()
			if ctx.Err() == nil {
				resetErr = conn.Conn().SetDeadline(time.Now().Add(resetTimeout))
			}
			watching.Unlock()
			if resetErr == nil {
				answered, resetErr = readUntilReady(ctx, conn)
			}
		} else {
			resetErr = runErr
		}
	}
	stop()
	watching.Lock()
	read = true
	watching.Unlock()
	if !answered && !conn.IsClosed() {
		// The reading stopped early (ctx ended, or the reset stalled), not the connection: the
		// session is closed, and the server is asked to cancel what it still runs, as pgconn asks
		// when it gives up a connection, then to end the backend if it runs on. No other run will
		// use this backend.
		go s.key.pool.endOnServer(conn, s)
	}
	if !conn.IsClosed() {
		if err := conn.Conn().SetDeadline(time.Time{}); err != nil && resetErr == nil {
			resetErr = err
		}
	}
	s.giveBackReset(resetErr)
	return runErr
}

// cancelOnServer asks the server, on a connection of its own, to cancel the statement that conn's
// backend runs; best effort, within 15 s.
func cancelOnServer(conn *pgconn.PgConn) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	conn.CancelRequest(ctx) //nolint:errcheck // best effort: the session is closed anyway
}

// readUntilReady reads the server's answer up to and including its next ReadyForQuery, drops its
// rows, and returns whether it read the ReadyForQuery, and the first error. An error that is not
// the server's (the connection broke, or ctx ended: the error then wraps ctx's) ends the reading;
// the server's error before it, such as the FATAL one that ended the session, is the one returned.
func readUntilReady(ctx context.Context, conn *pgconn.PgConn) (ready bool, err error) {
	var first error
	for {
		msg, err := conn.ReceiveMessage(context.Background()) // ctx is watched by Run
		if err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%w)", ctx.Err(), err)
			}
			// The server's FATAL error before it says why the connection then broke; a FATAL error
			// is returned here too, once the connection is closed.
			return false, cmp.Or(first, err)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			if first == nil {
				first = pgconn.ErrorResponseToPgError(m)
			}
		case *pgproto3.ReadyForQuery:
			return true, first
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

// ResetSQL returns the reset sent behind each run, as one query of the simple protocol (for a
// measurement that sends the runs' own statements without the agent).
func ResetSQL() string { return resetSQL }

// resetTimeout bounds the reset of a session after its run.
const resetTimeout = 5 * time.Second
