package task

import (
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestErrorText(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   pgconn.PgError
		input string
		want  string
	}{
		{"plain", pgconn.PgError{Severity: "ERROR", SeverityUnlocalized: "ERROR", Message: "division by zero", Code: "22012"}, "SELECT 1/0 AS a",
			"ERROR:  division by zero\nSQLSTATE:  22012\nSTATEMENT:  SELECT 1/0 AS a"},
		{"every field", pgconn.PgError{Severity: "ERREUR", SeverityUnlocalized: "ERROR", Message: "m", Detail: "d", Hint: "h", Where: "w", Code: "P0001"}, "SELECT f()",
			"ERROR:  m\nDETAIL:  d\nHINT:  h\nCONTEXT:  w\nSQLSTATE:  P0001\nSTATEMENT:  SELECT f()"},
		{"fatal", pgconn.PgError{Severity: "FATAL", Message: "terminating connection due to administrator command", Code: "57P01"}, "SELECT 1",
			"FATAL:  terminating connection due to administrator command\nSQLSTATE:  57P01\nSTATEMENT:  SELECT 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ErrorText(&c.err, c.input); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
	if got, want := AgentErrorText("no session", "SELECT 1"), "ERROR:  no session\nSTATEMENT:  SELECT 1"; got != want {
		t.Errorf("AgentErrorText = %q, want %q", got, want)
	}
}

func TestRetried(t *testing.T) {
	for code, want := range map[string]bool{"42601": false, "42501": false, "42P01": false, "22012": true, "57014": true, "": true, "40001": true} {
		if got := retried(code); got != want {
			t.Errorf("retried(%q) = %v, want %v", code, got, want)
		}
	}
}
