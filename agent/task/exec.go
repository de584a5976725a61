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
	// Committed: the attempt's proof is known to have committed, though the agent lost its output
	// (a task adopted from an agent gone): it is not retried.
	Committed bool
}

// execute runs begin, then, only if it succeeded, the input, each as a simple-protocol query of its
// own on conn, and reads the input's answers into the task's output (docs/tasks.md): the result
// sets, command tags and COPY ... TO STDOUT text of each statement, in order. The first error ends
// the query and the output keeps what came before it. COPY ... FROM STDIN fails: a task has no
// data to send. When ctx ends the query is cancelled and the session is not given back.
//
// proof, when not "", is sent at the end of the input (TaskProofSQL): the input's implicit
// transaction then also records that the attempt ran, and its tag is not part of the output. An
// input that cannot run in a transaction block with it (a lone VACUUM, CREATE INDEX CONCURRENTLY,
// a procedure that commits) fails before any of its statements completed: it is then sent again
// alone, as psql would send it, and is run at least once rather than exactly once.
func execute(ctx context.Context, conn *pgconn.PgConn, begin, input, proof string, out *Output) Result {
	stop := context.AfterFunc(ctx, func() {
		cancelCtx, cancel := context.WithTimeout(context.Background(), cancelGrace)
		defer cancel()
		_ = conn.CancelRequest(cancelCtx) // the deadline below ends the wait if it is lost
		_ = conn.Conn().SetDeadline(time.Now().Add(cancelGrace))
	})
	r, _ := query(conn, begin, begin, false, NewOutput(out.f))
	if r.Error == nil {
		if proof == "" {
			r, _ = query(conn, input, input, false, out)
		} else {
			var completed int
			fresh := NewOutput(out.f)
			r, completed = query(conn, input+proof, input, true, out)
			if r.Error != nil && !r.Broken && completed == 0 && alone(r.SQLState) && ctx.Err() == nil {
				r, _ = query(conn, input, input, false, fresh)
			}
		}
	}
	if !stop() || ctx.Err() != nil {
		r.Broken = true // cancelled: a cancel request or a deadline may be on the session
	}
	return r
}

// alone tells whether an input that failed with the proof after it, before any of its statements
// completed, may run when sent alone: it failed because it cannot run in a transaction block
// (25001) or commits inside a procedure (2D000), or the proof made its text unparsable (42601: a
// syntax error; sent alone it fails again with its own position).
func alone(sqlState string) bool {
	return sqlState == "25001" || sqlState == "2D000" || sqlState == "42601"
}

// query sends text as one simple-protocol query and reads its answers into out until the server is
// ready again; statement is what error texts quote. It returns how many statements completed.
// With proof, the text ends with the proof's CALL: its tag is left out of the output.
func query(conn *pgconn.PgConn, text, statement string, proof bool, out *Output) (r Result, completed int) {
	fe := conn.Frontend()
	fe.Send(&pgproto3.Query{String: text})
	if err := fe.Flush(); err != nil {
		return brokenResult(err, statement, out), 0
	}
	resultSet := false
	var copied strings.Builder
	var held *pgproto3.CommandComplete // the last tag, held back until it is known not to be the proof's
	heldSet := false
	release := func() {
		if held != nil {
			out.Done(string(held.CommandTag), heldSet)
			held = nil
		}
	}
	for {
		msg, err := conn.ReceiveMessage(context.Background())
		if err != nil {
			release()
			if r.Error != nil { // the server's error (FATAL) came first, then the session ended
				r.Output, r.Broken = out.Text(), true
				return r, completed
			}
			return brokenResult(err, statement, out), completed
		}
		switch m := msg.(type) {
		case *pgproto3.RowDescription:
			release()
			resultSet = true
			columns := make([]Column, len(m.Fields))
			for i, f := range m.Fields {
				columns[i] = NewColumn(string(f.Name), f.DataTypeOID)
			}
			out.Columns(columns)
		case *pgproto3.DataRow:
			out.Row(m.Values) // formatted at once: the values are the receive buffer's
		case *pgproto3.CopyOutResponse:
			release()
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
				return brokenResult(err, statement, out), completed
			}
		case *pgproto3.CommandComplete:
			release()
			completed++
			if proof {
				held, heldSet = &pgproto3.CommandComplete{CommandTag: append([]byte(nil), m.CommandTag...)}, resultSet
			} else {
				out.Done(string(m.CommandTag), resultSet)
			}
			resultSet = false
		case *pgproto3.ErrorResponse:
			release()
			pgErr := pgconn.ErrorResponseToPgError(m)
			text := ErrorText(pgErr, statement)
			r.Error, r.SQLState = &text, pgErr.Code
			if pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" {
				r.Broken = true
			}
		case *pgproto3.ReadyForQuery:
			if r.Error != nil || held == nil || string(held.CommandTag) != "CALL" {
				release() // the proof did not complete: the tag held is the input's
			}
			r.Output = out.Text()
			return r, completed
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
