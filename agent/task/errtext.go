package task

import (
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// ErrorText is a task's error column for the server's error e while it ran input: read like the
// server log, a label and two spaces on each line (docs/tasks.md, "Errors"):
//
//	ERROR:  division by zero
//	SQLSTATE:  22012
//	STATEMENT:  SELECT 1/0 AS a
//
// with DETAIL, HINT and CONTEXT lines after the first when the server sent them.
func ErrorText(e *pgconn.PgError, input string) string {
	severity := e.SeverityUnlocalized
	if severity == "" {
		severity = e.Severity
	}
	if severity == "" {
		severity = "ERROR"
	}
	var b strings.Builder
	b.WriteString(severity + ":  " + e.Message)
	for _, l := range []struct{ label, text string }{
		{"DETAIL", e.Detail}, {"HINT", e.Hint}, {"CONTEXT", e.Where}, {"SQLSTATE", e.Code}, {"STATEMENT", input},
	} {
		if l.text != "" {
			b.WriteString("\n" + l.label + ":  " + l.text)
		}
	}
	return storable(b.String())
}

// AgentErrorText is a task's error column for a failure that is not the server's answer to its
// input (its session ended, its owner may not log in): an ERROR line saying so, and the input.
func AgentErrorText(message, input string) string {
	return ErrorText(&pgconn.PgError{Severity: "ERROR", Message: message}, input)
}

// retried tells whether a failure with SQLSTATE code may succeed when run again: not for class 42
// (syntax error, undefined object, insufficient privilege), whose text fails the same way again.
func retried(code string) bool { return !strings.HasPrefix(code, "42") }
