package sqlschema_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/internal/schedulevectors"
	"github.com/pgjobs/pgjobs/schedule"
)

// scheduleWhere is the p_where the tests pass to pgj_parse_schedule_.
const scheduleWhere = "argument 1 of the test"

// outcome is what a parser made of one schedule text: the canonical text and the fields as the
// vectors file writes them (TYPE YEAR MONTH DAY HOUR MINUTE, "-" for a field not given), or the
// column and message of the error.
type outcome struct {
	canonical string
	fields    string
	col       int
	msg       string
}

func (o outcome) String() string {
	if o.msg != "" {
		return fmt.Sprintf("error 1:%d: %s", o.col, o.msg)
	}
	return fmt.Sprintf("%q [%s]", o.canonical, o.fields)
}

// vector is one case of schedule/testdata/vectors.txt.
type vector struct {
	line  int
	input string
	want  outcome
}

// readVectors reads the test vectors shared with the schedule package.
func readVectors(t *testing.T) []vector {
	t.Helper()
	cases, err := schedulevectors.Read("../schedule/testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) == 0 {
		t.Fatal("vectors.txt has no cases")
	}
	vectors := make([]vector, 0, len(cases))
	for _, c := range cases {
		v := vector{line: c.Line, input: c.Input, want: outcome{canonical: c.Canonical, fields: strings.Join(c.Fields, " ")}}
		if c.Err != "" {
			if v.want, err = errorOutcome(c.Err); err != nil {
				t.Fatalf("vectors.txt:%d: %v", c.Line, err)
			}
		}
		vectors = append(vectors, v)
	}
	return vectors
}

// errorOutcome splits an error of the Go parser, "1:COL: MSG".
func errorOutcome(text string) (outcome, error) {
	rest, ok := strings.CutPrefix(text, "1:")
	colText, msg, found := strings.Cut(rest, ": ")
	col, err := strconv.Atoi(colText)
	if !ok || !found || err != nil || col < 1 || msg == "" {
		return outcome{}, fmt.Errorf("error %q is not 1:COL: MESSAGE", text)
	}
	return outcome{col: col, msg: msg}, nil
}

// goOutcome parses text with the Go parser.
func goOutcome(t *testing.T, text string) outcome {
	t.Helper()
	s, err := schedule.Parse(text)
	if err != nil {
		o, perr := errorOutcome(err.Error())
		if perr != nil {
			t.Fatalf("schedule.Parse(%q): %v", text, perr)
		}
		return o
	}
	show := func(f schedule.Field, v int) string {
		if !s.Has(f) {
			return "-"
		}
		return strconv.Itoa(v)
	}
	fields := []string{s.Type.String(), show(schedule.Year, s.Year), show(schedule.Month, s.Month),
		show(schedule.Day, s.Day), show(schedule.Hour, s.Hour), strconv.Itoa(s.Minute)}
	return outcome{canonical: s.String(), fields: strings.Join(fields, " ")}
}

// sqlResult is one answer of pgj_parse_schedule_: its fields, or the error it raised.
type sqlResult struct {
	typ, canonical                 *string
	year, month, day, hour, minute *int32
	code, message, detail          string // the error's SQLSTATE, message and detail
}

// outcome checks r, the answer of pgj_parse_schedule_ for text: an error must be SQLSTATE 22023
// with the message and detail the function promises, a result must give the type, the minute and
// the canonical text. Anything else becomes a message that no parser writes, so that the
// comparison fails and shows it.
func (r sqlResult) outcome(text string) outcome {
	if r.code != "" {
		msg, okMsg := strings.CutPrefix(r.message, "invalid schedule "+quoteLiteral(text)+": ")
		colText, okDetail := strings.CutPrefix(r.detail, scheduleWhere+", at column ")
		col, colErr := strconv.Atoi(colText)
		if r.code != "22023" || !okMsg || !okDetail || colErr != nil || msg == "" {
			return outcome{msg: fmt.Sprintf("SQLSTATE %s, message %q, detail %q", r.code, r.message, r.detail)}
		}
		return outcome{col: col, msg: msg}
	}
	if r.typ == nil || r.minute == nil || r.canonical == nil {
		return outcome{msg: "NULL type, minute or canonical text"}
	}
	show := func(v *int32) string {
		if v == nil {
			return "-"
		}
		return strconv.Itoa(int(*v))
	}
	fields := []string{*r.typ, show(r.year), show(r.month), show(r.day), show(r.hour), show(r.minute)}
	return outcome{canonical: *r.canonical, fields: strings.Join(fields, " ")}
}

// sqlOutcome parses text with one call of pgjobs.pgj_parse_schedule_, taking a raised error as
// the client sees it.
func sqlOutcome(t *testing.T, conn *pgx.Conn, text string) outcome {
	t.Helper()
	var r sqlResult
	err := conn.QueryRow(context.Background(),
		`SELECT schtype, schyear, schmonth, schday, schhour, schminute, schcanonical
		   FROM pgjobs.pgj_parse_schedule_($1, $2)`, text, scheduleWhere).
		Scan(&r.typ, &r.year, &r.month, &r.day, &r.hour, &r.minute, &r.canonical)
	if err != nil {
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			t.Fatalf("pgj_parse_schedule_(%q): %v", text, err)
		}
		r.code, r.message, r.detail = pgErr.Code, pgErr.Message, pgErr.Detail
	}
	return r.outcome(text)
}

// sqlOutcomes parses many texts with pgjobs.pgj_parse_schedule_ in one query, each call in a
// subtransaction that catches its error; it is for the long lists, where a round trip for each
// text would make the test slow.
func sqlOutcomes(t *testing.T, conn *pgx.Conn, texts []string) []outcome {
	t.Helper()
	ctx := context.Background()
	_, err := conn.Exec(ctx, `CREATE OR REPLACE FUNCTION pg_temp.try_parse_schedule(p_text text, p_where text,
    OUT schtype text, OUT schyear int, OUT schmonth int, OUT schday int, OUT schhour int,
    OUT schminute int, OUT schcanonical text, OUT code text, OUT message text, OUT detail text)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT s.schtype, s.schyear, s.schmonth, s.schday, s.schhour, s.schminute, s.schcanonical
      INTO schtype, schyear, schmonth, schday, schhour, schminute, schcanonical
      FROM pgjobs.pgj_parse_schedule_(p_text, p_where) s;
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS code = RETURNED_SQLSTATE, message = MESSAGE_TEXT, detail = PG_EXCEPTION_DETAIL;
END
$$`)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, `SELECT r.schtype, r.schyear, r.schmonth, r.schday, r.schhour, r.schminute,
		       r.schcanonical, coalesce(r.code, ''), coalesce(r.message, ''), coalesce(r.detail, '')
		  FROM unnest($1::text[]) WITH ORDINALITY AS u(text, n),
		       LATERAL pg_temp.try_parse_schedule(u.text, $2) AS r
		 ORDER BY u.n`, texts, scheduleWhere)
	if err != nil {
		t.Fatal(err)
	}
	var outcomes []outcome
	for rows.Next() {
		var r sqlResult
		if err := rows.Scan(&r.typ, &r.year, &r.month, &r.day, &r.hour, &r.minute, &r.canonical,
			&r.code, &r.message, &r.detail); err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, r.outcome(texts[len(outcomes)]))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(outcomes) != len(texts) {
		t.Fatalf("%d answers for %d schedules", len(outcomes), len(texts))
	}
	return outcomes
}

// quoteLiteral quotes s as PostgreSQL's quote_literal (format's %L) does.
func quoteLiteral(s string) string {
	q := "'" + strings.NewReplacer(`'`, `''`, `\`, `\\`).Replace(s) + "'"
	if strings.Contains(s, `\`) {
		q = "E" + q
	}
	return q
}

// scheduleConn returns a connection to a fresh database holding sql/001_1_schedule.sql, loaded
// as the schema installer does: in a transaction, after CREATE SCHEMA pgjobs.
func scheduleConn(t *testing.T) *pgx.Conn {
	t.Helper()
	script, err := os.ReadFile("sql/001_1_schedule.sql")
	if err != nil {
		t.Fatal(err)
	}
	conn := cluster.Connect(t, cluster.NewDatabase(t))
	ctx := context.Background()
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // a no-op after Commit
	if _, err := tx.Exec(ctx, "CREATE SCHEMA pgjobs"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, string(script)); err != nil {
		t.Fatalf("sql/001_1_schedule.sql: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestScheduleSQLVectors checks pgj_parse_schedule_ against every case of the vectors file, and
// against the Go parser on the same inputs.
func TestScheduleSQLVectors(t *testing.T) {
	conn := scheduleConn(t)
	vectors := readVectors(t)
	for _, v := range vectors {
		t.Run(strconv.Quote(v.input), func(t *testing.T) {
			if !utf8.ValidString(v.input) || strings.ContainsRune(v.input, 0) {
				t.Skipf("vectors.txt:%d: a PostgreSQL text cannot hold %q", v.line, v.input)
			}
			got := sqlOutcome(t, conn, v.input)
			if got != v.want {
				t.Fatalf("vectors.txt:%d: pgj_parse_schedule_(%q)\n got %s\nwant %s", v.line, v.input, got, v.want)
			}
			if goGot := goOutcome(t, v.input); goGot != got {
				t.Fatalf("vectors.txt:%d: %q: pgj_parse_schedule_ gives %s, schedule.Parse %s", v.line, v.input, got, goGot)
			}
		})
	}
	t.Logf("%d vectors checked", len(vectors))
}

// TestScheduleSQLNull checks the error for a NULL schedule.
func TestScheduleSQLNull(t *testing.T) {
	conn := scheduleConn(t)
	_, err := conn.Exec(context.Background(), "SELECT pgjobs.pgj_parse_schedule_(NULL, $1)", scheduleWhere)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		t.Fatalf("pgj_parse_schedule_(NULL): %v, want SQLSTATE 22004", err)
	}
	if pgErr.Code != "22004" || pgErr.Message != "invalid schedule: NULL (a schedule such as 'D 17:30' is required)" ||
		pgErr.Detail != scheduleWhere {
		t.Fatalf("pgj_parse_schedule_(NULL): SQLSTATE %s, message %q, detail %q", pgErr.Code, pgErr.Message, pgErr.Detail)
	}
}

// trickyInputs are schedules beyond the vectors, checked by the Go and SQL parsers agreeing.
var trickyInputs = []string{
	// A number's sign starts a new token; a date's parts; dates given up for a time.
	"D 1-2:00", "D 1 -2:00", "D 2003.12.01 ", "D 12.31.1 0:00", "D 1.2.3.4.5 0:00", "W 1.2.3 0:00",
	"D 1.", "D 1.2", "D 1.2.", "D 1.2.3", "D 1.2.3.", "D 1.x", "D 1.2.x", "D 1.2.3.x 0:00",
	"D 2003.12.01.x 1:00", "D 1.2 x", "D 1.2.3 x", "D 1..2 0:00", "D 1.2.:00", "D 1:2.3", "D 1:2:3",
	"D 1: ", "D 1:2 ", "D 5 1:", "D 5 :", "D 5 ", "D 5  1:00", "D 1.2 3.4", "D x", "D -", "D -x", "D --1",
	"D 1.2.3 4:5x", "D 12.01 1:00 ", "D 12.01 1:00:", "D 5.5.5.5", "D 2003.12.01 17:30:",
	// Semantic checks in their order, and the canonical text.
	"W 7 7", "i 0 0:00", "I 1.1", "I 0 5", "I 0:01", "I 1 0:00", "I -1 0:00", "I 2147483647 23:59",
	"W 1.2.3.4 1:00", "D 2003.13.32 25:60", "D 203.13.01 1:00", "D 2003.13.01 1:00", "D 2003.02.30 1:00",
	"D 2003.02.-1 25:00", "D 2003.02.-29 1:00", "D 0000.02.29 0:00", "D 2100.02.29 0:00",
	"D 2400.02.29 0:00", "D 9999.12.31 23:59", "D 12.-28 0:00", "D 12.-0 0:00", "D -0:-0", "D 0:-0",
	"D -0", "D 00:000000000000000000000000000000000000000000000000000000000001",
	"D 9223372036854775807", "D 9223372036854775808", "D -9223372036854775808", "D -9223372036854775809",
	"I 9223372036854775808 0:00", "D 1.9223372036854775808 0:00", "D 02.29 0:00", "d 2003.2.3 4:5",
	"Dd 1:00", "_ 1:00", "X", "Daily", "d", "i", "w 5",
	// White space, control and quote characters, multibyte characters.
	"\t", "\tD 1:00", "D\t1:00", "D 1:00\t", "D 1\t", "\n", "D 1:00\r\n", "\x7f", "D 1\x01", "D 1\x1b",
	"\v", "\f\r", "D 1\v", "D 1'", "'D 1:00'", "D 1\"", "\"D\"", "D 1\\", "\\", "D 1:0\\0",
	"é 1:00", "Dé 1:00", "D é", "D 1é", "D 1:é", "D 1:00é", "D 12.é 1:00", "D 12.01é 1:00",
	"éééééééééééééééééééééééééééééééééééé", "D ééééééééééééééééééééééééééééééé",
	"D 1\u00a0", "\u00a0", "\u3000 \u2028", "D\u3000", "D 1\u3000", "D 1\u00ad", "D 1\u0085", "D 1\u200b",
	"D 1\ufeff", "D 1\ue000", "D 1\ufffd", "D 1\U0001f600", "\U0001f600", "D 1\U000e0001", "D 1\U0010ffff",
	"D 1\u0378", "\u0378D",
	// The length limit: 64 bytes, counted in bytes; columns are counted in characters.
	"D " + strings.Repeat("0", 61) + "1", "D " + strings.Repeat("0", 62) + "1",
	"D " + strings.Repeat("0", 56) + "1:1:30", "D " + strings.Repeat("0", 57) + "1:1:30",
	"D 1:3" + strings.Repeat(" ", 59), "D 1:3" + strings.Repeat(" ", 60),
	"D 1:3" + strings.Repeat("é", 29) + "x", "D 1:3" + strings.Repeat("é", 29) + "xx",
	"D 1:3" + strings.Repeat("\U0001f600", 14) + "xxx", "D 1:3" + strings.Repeat("\U0001f600", 15),
	strings.Repeat(" ", 64), strings.Repeat(" ", 65), strings.Repeat("é", 32), strings.Repeat("é", 33),
}

// quotingInputs returns inputs that take each character on either side of a change in Go's
// quoting or white space (and every ASCII character) to where %q and strings.TrimSpace see it:
// alone (an unknown schedule type, or an empty schedule) and after a number.
func quotingInputs() []string {
	var inputs []string
	last := rune(0)
	add := func(r rune) {
		if r > last && utf8.ValidRune(r) {
			inputs = append(inputs, string(r), "D 1"+string(r))
			last = r
		}
	}
	for r := rune(1); r <= unicode.MaxRune; r++ {
		prev := r - 1
		if r < 0x80 || strconv.IsPrint(r) != strconv.IsPrint(prev) || unicode.IsSpace(r) != unicode.IsSpace(prev) {
			add(prev)
			add(r)
		}
	}
	return inputs
}

// shortInputs returns every body of up to 6 tokens from a small alphabet, after "D ": the
// syntax errors of participle's lookahead in every arrangement, and the dates it gives up.
func shortInputs() []string {
	alphabet := []string{"1", " ", ".", ":", "x"}
	inputs, level := []string{"D "}, []string{"D "}
	for range 6 {
		var next []string
		for _, prefix := range level {
			for _, a := range alphabet {
				next = append(next, prefix+a)
			}
		}
		inputs, level = append(inputs, next...), next
	}
	return inputs
}

// TestScheduleSQLMatchesGo checks that pgj_parse_schedule_ and schedule.Parse agree on inputs
// beyond the vectors: a table of tricky ones, the characters where Go's quoting changes, and the
// short bodies.
func TestScheduleSQLMatchesGo(t *testing.T) {
	conn := scheduleConn(t)
	for _, input := range trickyInputs {
		t.Run(strconv.Quote(input), func(t *testing.T) {
			if goGot, got := goOutcome(t, input), sqlOutcome(t, conn, input); goGot != got {
				t.Fatalf("%q: pgj_parse_schedule_ gives %s, schedule.Parse %s", input, got, goGot)
			}
		})
	}
	for _, list := range []struct {
		name   string
		inputs []string
	}{{"quoting", quotingInputs()}, {"short", shortInputs()}} {
		t.Run(list.name, func(t *testing.T) {
			failures := 0
			for i, got := range sqlOutcomes(t, conn, list.inputs) {
				input := list.inputs[i]
				if goGot := goOutcome(t, input); goGot != got {
					t.Errorf("%q: pgj_parse_schedule_ gives %s, schedule.Parse %s", input, got, goGot)
					if failures++; failures == 20 {
						t.FailNow()
					}
				}
			}
			t.Logf("%d inputs checked", len(list.inputs))
		})
	}
}
