package task

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	// Unsent: the session failed before the input was sent (the guard's query found it ended):
	// the task may run on another session.
	Unsent bool
}

// execute runs begin, then, only if it succeeded, begun and the input, each query a simple-protocol
// query of its own on conn, and reads the input's answers into the task's output (docs/tasks.md): the result
// sets, command tags and COPY ... TO STDOUT text of each statement, in order. The first error ends
// the query and the output keeps what came before it. COPY ... FROM STDIN fails: a task has no
// data to send. When ctx ends the query is cancelled and the session is not given back.
//
// proof, when not "", is sent at the end of the input (TaskProofSQL): the input's implicit
// transaction then also records that the attempt ran, and its result is not part of the output. An
// input that cannot run in a transaction block with it (a lone VACUUM, CREATE INDEX CONCURRENTLY,
// a procedure that commits) fails before any of its statements completed, with nothing committed:
// it is then sent again alone, as psql would send it, and runs at least once rather than exactly
// once.
func execute(ctx context.Context, conn *pgconn.PgConn, begin, input, proof string, begun func(), out *Output) Result {
	stop := context.AfterFunc(ctx, func() {
		cancelCtx, cancel := context.WithTimeout(context.Background(), cancelGrace)
		defer cancel()
		_ = conn.CancelRequest(cancelCtx) // the deadline below ends the wait if it is lost
		_ = conn.Conn().SetDeadline(time.Now().Add(cancelGrace))
	})
	r, _, _ := query(conn, begin, begin, false, NewOutput(out.f))
	if r.Error != nil && r.Broken {
		r.Unsent = true // the session had ended: the input never reached the server
	}
	if r.Error == nil {
		begun()
		if proof == "" {
			r, _, _ = query(conn, input, input, false, out)
		} else {
			fresh := NewOutput(out.f)
			var completed int
			var pgErr *pgconn.PgError
			r, completed, pgErr = query(conn, input+proof, input, true, out)
			if pgErr != nil && !r.Broken && completed == 0 && alone(pgErr) && ctx.Err() == nil {
				r, _, _ = query(conn, input, input, false, fresh)
			}
		}
	}
	if !stop() || ctx.Err() != nil {
		r.Broken = true // cancelled: a cancel request or a deadline may be on the session
	}
	return r
}

// alone tells whether an input that failed with the proof after it, before any of its statements
// completed, is to be sent again alone: it cannot run in a transaction block (25001) or commits
// inside a procedure or DO block (2D000), or the proof made its text unparsable (42601 from the
// parser, which runs nothing: not one raised at run time, by an EXECUTE say, after effects that do
// not roll back).
func alone(e *pgconn.PgError) bool {
	switch e.Code {
	case "25001", "2D000":
		return true
	case "42601":
		return e.Where == "" && e.InternalQuery == ""
	}
	return false
}

// query sends text as one simple-protocol query and reads its answers into out until the server is
// ready again; statement is what error texts quote. It returns how many statements completed, and
// the server's error. With proof, the text ends with the proof's SELECT: its result is left out
// of the output.
func query(conn *pgconn.PgConn, text, statement string, proof bool, out *Output) (r Result, completed int, pgErr *pgconn.PgError) {
	fe := conn.Frontend()
	fe.Send(&pgproto3.Query{String: text})
	if err := fe.Flush(); err != nil {
		return brokenResult(err, statement, out), 0, nil
	}
	resultSet := false
	var copied strings.Builder
	var held *heldResult // a result that may be the proof's, until the query ends
	release := func() {
		if held != nil {
			held.replay(out)
			held = nil
		}
	}
	for {
		msg, err := conn.ReceiveMessage(context.Background())
		if err != nil {
			// A result held is the proof's, its query cut short: not part of the output.
			held = nil
			if r.Error != nil { // the server's error (FATAL) came first, then the session ended
				r.Output, r.Broken = out.Text(), true
				return r, completed, pgErr
			}
			return brokenResult(err, statement, out), completed, pgErr
		}
		switch m := msg.(type) {
		case *pgproto3.RowDescription:
			release()
			resultSet = true
			if proof && provesResult(m) {
				held = &heldResult{fields: cloneFields(m.Fields)}
				continue
			}
			out.Columns(columnsOf(m.Fields))
		case *pgproto3.DataRow:
			if held != nil {
				held.rows = append(held.rows, cloneValues(m.Values))
				continue
			}
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
				return brokenResult(err, statement, out), completed, pgErr
			}
		case *pgproto3.CommandComplete:
			completed++
			if held != nil && !held.done {
				held.tag, held.done = string(m.CommandTag), true
				resultSet = false
				continue
			}
			release()
			out.Done(string(m.CommandTag), resultSet)
			resultSet = false
		case *pgproto3.ErrorResponse:
			// A result held is the proof's, which failed or whose commit did (a deferred
			// constraint, a serialization failure): not part of the output.
			held = nil
			pgErr = pgconn.ErrorResponseToPgError(m)
			text := ErrorText(pgErr, statement)
			r.Error, r.SQLState = &text, pgErr.Code
			if pgErr.Severity == "FATAL" || pgErr.Severity == "PANIC" {
				r.Broken = true
			}
		case *pgproto3.ReadyForQuery:
			if r.Error != nil || held == nil || !held.done {
				release() // the proof did not complete: the result held is the input's
			}
			r.Output = out.Text()
			if m.TxStatus != 'I' {
				// The input left a transaction block open (BEGIN without COMMIT): closing the
				// session rolls it back, and the task says so rather than end DONE.
				r.Broken = true
				if r.Error == nil {
					text := AgentErrorText("the input left a transaction open (BEGIN without COMMIT): its work was rolled back", statement)
					r.Error, r.SQLState = &text, "25001"
				}
			}
			return r, completed, pgErr
		}
	}
}

// heldResult is a result set read but not yet written into the output.
type heldResult struct {
	fields []pgproto3.FieldDescription
	rows   [][][]byte
	tag    string
	done   bool // its CommandComplete came
}

// replay writes the result into out.
func (h *heldResult) replay(out *Output) {
	out.Columns(columnsOf(h.fields))
	for _, row := range h.rows {
		out.Row(row)
	}
	if h.done {
		out.Done(h.tag, true)
	}
}

// provesResult tells whether a result set is shaped as the proof's: one void column named
// pgj_task_proof_.
func provesResult(m *pgproto3.RowDescription) bool {
	const voidOID = 2278
	return len(m.Fields) == 1 && string(m.Fields[0].Name) == "pgj_task_proof_" && m.Fields[0].DataTypeOID == voidOID
}

func columnsOf(fields []pgproto3.FieldDescription) []Column {
	columns := make([]Column, len(fields))
	for i, f := range fields {
		columns[i] = NewColumn(string(f.Name), f.DataTypeOID)
	}
	return columns
}

// cloneFields copies a row description's fields out of the receive buffer.
func cloneFields(fields []pgproto3.FieldDescription) []pgproto3.FieldDescription {
	c := slices.Clone(fields)
	for i := range c {
		c[i].Name = slices.Clone(c[i].Name)
	}
	return c
}

// cloneValues copies a row's values out of the receive buffer.
func cloneValues(values [][]byte) [][]byte {
	c := make([][]byte, len(values))
	for i, v := range values {
		if v != nil {
			c[i] = slices.Clone(v)
		}
	}
	return c
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
