package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/sqlschema"
)

func TestPrintJSONEscapesControlsAndFormats(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"C0 control", "a\x1b[31mb", `"a\u001b[31mb"`},
		{"C1 next line", "a\u0085b", `"a\u0085b"`},
		{"DEL", "a\x7fb", `"a\u007fb"`},
		{"bidi override", "Bill\u202eevil", `"Bill\u202eevil"`},
		{"line separator", "a\u2028b", `"a\u2028b"`},
		{"format character past U+FFFF", "a\U000E0001b", `"a\udb40\udc01b"`},
		{"multibyte stays", "tâche", `"tâche"`},
	} {
		var b strings.Builder
		if err := printJSON(&b, tt.in); err != nil {
			t.Fatal(err)
		}
		var back string
		if got := strings.TrimSuffix(b.String(), "\n"); got != tt.want {
			t.Errorf("%s: printJSON(%q) = %s, want %s", tt.name, tt.in, got, tt.want)
		} else if err := json.Unmarshal([]byte(got), &back); err != nil || back != tt.in {
			t.Errorf("%s: %s reads back as %q (%v), want %q", tt.name, got, back, err, tt.in)
		}
	}
}

// TestPrintError: the error line and a wrapped PostgreSQL error's DETAIL and HINT are printed with
// control characters escaped (a job's own RAISE, names of other roles' objects), a DETAIL of
// several lines aligned under its first.
func TestPrintError(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"plain", errors.New("no such job\n  Bill"), "pgjobs: no such job Bill\n"},
		{"escape in the message", fmt.Errorf("run: job ended: %s", "P0001: x\x1b[2J"), "pgjobs: run: job ended: P0001: x\\x1b[2J\n"},
		{"PostgreSQL's detail and hint: one line each", fmt.Errorf("disabledb: %w", &pgconn.PgError{Severity: "ERROR", Code: "2BP01", Message: "cannot drop \x1b]0;x\a",
			Detail: "default of \"a\x1b[31m\"\nand of b\u202e\n", Hint: "drop them"}),
			"pgjobs: disabledb: ERROR: cannot drop \\x1b]0;x\\a (SQLSTATE 2BP01)\n" +
				"DETAIL:  default of \"a\\x1b[31m\"\\nand of b\\u202e\n" +
				"HINT:  drop them\n"},
		{"a line break in a role's unquoted name adds no line", &pgconn.PgError{Severity: "ERROR", Code: "2BP01", Message: "cannot drop view v",
			Detail: "column x\ntable al.orders depends on view v\ncolumn y of table mm.t depends on view v"},
			"pgjobs: ERROR: cannot drop view v (SQLSTATE 2BP01)\n" +
				"DETAIL:  column x\\ntable al.orders depends on view v\\ncolumn y of table mm.t depends on view v\n"},
		{"pgjobs' own detail: an item a line", &pgconn.PgError{Severity: "ERROR", Code: "2BP01", Message: "cannot drop schema pgjobs", Routine: sqlschema.DetailByLine,
			Detail: "column x\\ntable al.orders of table mm.t depends on pgjobs\nview al.v depends on pgjobs"},
			"pgjobs: ERROR: cannot drop schema pgjobs (SQLSTATE 2BP01)\n" +
				"DETAIL:  column x\\ntable al.orders of table mm.t depends on pgjobs\n" +
				"         view al.v depends on pgjobs\n"},
		{"hint alone, through a wrapper", fmt.Errorf("run: %w", pgMessage{&pgconn.PgError{Message: "job \"Held\" is paused", Hint: "pgj_resume_job resumes it"}}),
			"pgjobs: run: job \"Held\" is paused\nHINT:  pgj_resume_job resumes it\n"},
	} {
		var b strings.Builder
		printError(&b, tt.err)
		if b.String() != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, b.String(), tt.want)
		}
	}
}

// TestCell: a name that could lay out cells of its own in a table (two blanks in a row, a blank
// at an end, a leading quote, nothing) is quoted as PostgreSQL quotes identifiers; others print as
// they are, made printable.
func TestCell(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"Backup", "Backup"},
		{"Nightly backup", "Nightly backup"},
		{"Backup" + strings.Repeat(" ", 40) + "alice  2026-11-29T01:08:45+00:00  ok", `"Backup` + strings.Repeat(" ", 40) + `alice  2026-11...`}, // quoted, and cut at 64
		{"Backup ", `"Backup "`},
		{" Backup", `" Backup"`},
		{`"Backup"`, `"""Backup"""`},
		{"", `""`},
		{"Back\x1b[2Jup", `Back\x1b[2Jup`},
		{strings.Repeat("\U000e0100", 200), strings.Repeat(`\U000e0100`, 6) + `\...`}, // 2,000 characters printed, cut to 64
		{strings.Repeat("x", 64), strings.Repeat("x", 64)},
		{strings.Repeat("x", 65), strings.Repeat("x", 61) + "..."},
	} {
		if got := cell(tt.in); got != tt.want {
			t.Errorf("cell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestShellWord: a name in a command pgjobs suggests is one shell word that runs nothing.
func TestShellWord(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"Billing", "Billing"},
		{"sales_2026.v1-a", "sales_2026.v1-a"},
		{"Nightly; touch /tmp/PWNED_$(id -u) #", `'Nightly; touch /tmp/PWNED_$(id -u) #'`},
		{"it's", `'it'\''s'`},
		{"", "''"},
		{"a b", "'a b'"},
	} {
		if got := shellWord(tt.in); got != tt.want {
			t.Errorf("shellWord(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}
