package task

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// cancelGrace is how long a run cancelled by the agent's stop may take to answer the cancel
// request before its session is dropped.
const cancelGrace = 10 * time.Second

// Result is what running a task's input produced.
type Result struct {
	Output   *string
	Error    *string // nil when the input succeeded
	SQLState string  // the error's, "" when none or not the server's
	Broken   bool    // the session cannot be given back: it ended, or it is in doubt
}

// execute runs begin, then, only if it succeeded, the input, each as a simple-protocol query of its
// own on conn (so that a lone VACUUM or CREATE INDEX CONCURRENTLY runs outside a transaction block,
// as it would in psql), and reads the input's answers into the task's output (docs/tasks.md): the
// result sets, command tags and COPY ... TO STDOUT text of each statement, in order. The first
// error ends the query and the output keeps what came before it. COPY ... FROM STDIN fails: a task
// has no data to send. When ctx ends the query is cancelled and the session is not given back.
func execute(ctx context.Context, conn *pgconn.PgConn, begin, input string, out *Output) Result {
	stop := context.AfterFunc(ctx, func() {
		cancelCtx, cancel := context.WithTimeout(context.Background(), cancelGrace)
		defer cancel()
		_ = conn.CancelRequest(cancelCtx) // the deadline below ends the wait if it is lost
		_ = conn.Conn().SetDeadline(time.Now().Add(cancelGrace))
	})
	r := query(conn, begin, input, NewOutput(out.f))
	if r.Error == nil {
		r = query(conn, input, input, out)
	}
	if !stop() || ctx.Err() != nil {
		r.Broken = true // cancelled: a cancel request or a deadline may be on the session
	}
	return r
}

// query sends text as one simple-protocol query and reads its answers into out until the server is
// ready again; statement is what error texts quote.
func query(conn *pgconn.PgConn, text, statement string, out *Output) Result {
	fe := conn.Frontend()
	fe.Send(&pgproto3.Query{String: text})
	if err := fe.Flush(); err != nil {
		return brokenResult(err, statement, out)
	}
	var r Result
	resultSet := false
	var copied strings.Builder
	for {
		msg, err := conn.ReceiveMessage(context.Background())
		if err != nil {
			if r.Error != nil { // the server's error (FATAL) came first, then the session ended
				r.Output, r.Broken = out.Text(), true
				return r
			}
			return brokenResult(err, statement, out)
		}
		switch m := msg.(type) {
		case *pgproto3.RowDescription:
			resultSet = true
			columns := make([]Column, len(m.Fields))
			for i, f := range m.Fields {
				columns[i] = NewColumn(string(f.Name), f.DataTypeOID)
			}
			out.Columns(columns)
		case *pgproto3.DataRow:
			out.Row(m.Values) // formatted at once: the values are the receive buffer's
		case *pgproto3.CopyOutResponse:
			resultSet = true
			copied.Reset()
		case *pgproto3.CopyData:
			if copied.Len() < MaxOutput {
				copied.Write(m.Data)
			}
		case *pgproto3.CopyDone:
			out.Copy(copied.String())
		case *pgproto3.CopyInResponse:
			fe.Send(&pgproto3.CopyFail{Message: "COPY FROM STDIN has no data in a task: the input cannot send any"})
			if err := fe.Flush(); err != nil {
				return brokenResult(err, statement, out)
			}
		case *pgproto3.CommandComplete:
			out.Done(string(m.CommandTag), resultSet)
			resultSet = false
		case *pgproto3.ErrorResponse:
			pgErr := pgconn.ErrorResponseToPgError(m)
			text := ErrorText(pgErr, statement)
			r.Error, r.SQLState = &text, pgErr.Code
			if pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" {
				r.Broken = true
			}
		case *pgproto3.ReadyForQuery:
			r.Output = out.Text()
			return r
		}
	}
}

// brokenResult is the result of a run whose session failed under it: the output so far, and an
// error saying so, unless the server's error came first.
func brokenResult(err error, input string, out *Output) Result {
	var pgErr *pgconn.PgError
	text := AgentErrorText(fmt.Sprintf("the task's session ended: %v", err), input)
	r := Result{Output: out.Text(), Error: &text, Broken: true}
	if errors.As(err, &pgErr) {
		text = ErrorText(pgErr, input)
		r.SQLState = pgErr.Code
	}
	return r
}
