package sqlschema_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// callSyntaxPrefix begins the message of every call pgj_call_syntax_('test', 2, ...) refuses.
const callSyntaxPrefix = "test: argument 2 (function call) is not one function call: "

// callFunctions are what the accepted calls of the tests call, so that PostgreSQL resolves them.
const callFunctions = `
CREATE FUNCTION named(x int DEFAULT 0, y text DEFAULT '', "Z" int DEFAULT 0) RETURNS int LANGUAGE sql AS 'SELECT x';
CREATE FUNCTION fé(a text, b text) RETURNS text LANGUAGE sql AS 'SELECT a || b';
CREATE FUNCTION "f$a$"(n int) RETURNS int LANGUAGE sql AS 'SELECT n';
CREATE FUNCTION "Mixed Case"() RETURNS int LANGUAGE sql AS 'SELECT 1';
CREATE SCHEMA "sché";
CREATE FUNCTION "sché".g() RETURNS int LANGUAGE sql AS 'SELECT 1';
CREATE FUNCTION "sché"."select"() RETURNS int LANGUAGE sql AS 'SELECT 1';
CREATE DOMAIN x AS text;
CREATE DOMAIN e AS text;
CREATE DOMAIN n AS text;
CREATE FUNCTION try_call(c text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
    RETURN pgjobs.pgj_call_syntax_('test', 2, c);
EXCEPTION WHEN syntax_error THEN
    RETURN NULL;
END
$$;
`

// callDatabase returns an enabled database with callFunctions in it.
func callDatabase(t *testing.T) string {
	t.Helper()
	db := enabledDatabase(t)
	if _, err := cluster.Connect(t, db).Exec(context.Background(), callFunctions); err != nil {
		t.Fatal(err)
	}
	return db
}

// callSession connects to db with standard_conforming_strings set to scs before the first call
// of pgj_call_syntax_, so that the session also compiles the function with that setting.
func callSession(t *testing.T, db, scs string) *pgx.Conn {
	t.Helper()
	conn := cluster.Connect(t, db)
	if _, err := conn.Exec(context.Background(), "SET standard_conforming_strings = "+scs); err != nil {
		t.Fatal(err)
	}
	return conn
}

// callSyntax returns what pgj_call_syntax_ makes of call.
func callSyntax(ctx context.Context, conn *pgx.Conn, call string) (string, error) {
	var got string
	err := conn.QueryRow(ctx, "SELECT pgjobs.pgj_call_syntax_('test', 2, $1)", call).Scan(&got)
	return got, err
}

// preparesAsOneCall prepares SELECT call with the extended protocol, which refuses more than one
// statement, and returns an error unless PostgreSQL prepares it as one statement of one column.
func preparesAsOneCall(ctx context.Context, conn *pgx.Conn, call string) error {
	sd, err := conn.PgConn().Prepare(ctx, "", "SELECT "+call, nil)
	if err != nil {
		return err
	}
	if len(sd.Fields) != 1 {
		return fmt.Errorf("SELECT %s has %d result columns, want 1", call, len(sd.Fields))
	}
	return nil
}

// TestCallSyntax checks what pgj_call_syntax_ accepts, and the exact error of what it refuses,
// with standard_conforming_strings on and off in the calling session: the verdicts are the same.
// Each accepted call is prepared by PostgreSQL as SELECT <call>: one statement, one column.
func TestCallSyntax(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := callDatabase(t)
	long := strings.Repeat("x", 80)
	tests := []struct {
		name  string
		input string
		want  string // the accepted call, or after callSyntaxPrefix the exact message
		ok    bool
	}{
		// Accepted.
		{"no arguments", "now()", "now()", true},
		{"surrounding whitespace", " \t\n concat(1)\r\n\f ", "concat(1)", true},
		{"whitespace and newlines between tokens", "concat (\n\t1 ,\r\n'x'\n)", "concat (\n\t1 ,\r\n'x'\n)", true},
		{"schema", "pg_catalog.concat(1)", "pg_catalog.concat(1)", true},
		{"quoted schema and name", `"pg_catalog" . "concat"(1)`, `"pg_catalog" . "concat"(1)`, true},
		{"quoted name with spaces and doubled quotes", `"Mixed Case"()`, `"Mixed Case"()`, true},
		{"unicode name and strings", "fé('é', '😀')", "fé('é', '😀')", true},
		{"quoted unicode schema", `"sché".g()`, `"sché".g()`, true},
		{"dollar inside a name", "f$a$(1)", "f$a$(1)", true},
		{"type-function keyword as a name", "left('abc', 1)", "left('abc', 1)", true},
		{"reserved keyword after a schema", `"sché".select()`, `"sché".select()`, true},
		{"string with doubled quotes", "concat('it''s', '', '''')", "concat('it''s', '', '''')", true},
		{"string holding SQL", "concat('); SELECT 1; --', '/* */', '$$')", "concat('); SELECT 1; --', '/* */', '$$')", true},
		{"escape strings", `concat(E'\'', E'\\', E'a\'b''c', E'\n\t\b\f\r', E'\q', E'\x41\101\u00e9\U0001F600', E'\x4z', E'\1234')`,
			`concat(E'\'', E'\\', E'a\'b''c', E'\n\t\b\f\r', E'\q', E'\x41\101\u00e9\U0001F600', E'\x4z', E'\1234')`, true},
		{"escape string ending in a backslash", `concat(E'\\')`, `concat(E'\\')`, true},
		{"escape string of a quote and a semicolon", `concat(E'\';')`, `concat(E'\';')`, true},
		{"lower-case prefixes", `concat(e'\'', b'1', x'f', n'x', u&'\00e9')`, `concat(e'\'', b'1', x'f', n'x', u&'\00e9')`, true},
		{"unicode escapes", `concat(U&'\00e9\+01F600\\', U&'!00e9!!\' UESCAPE '!', U&'*00e9' uescape '*')`,
			`concat(U&'\00e9\+01F600\\', U&'!00e9!!\' UESCAPE '!', U&'*00e9' uescape '*')`, true},
		{"unicode name", `U&"\0063oncat"(1)`, `U&"\0063oncat"(1)`, true},
		{"unicode name with UESCAPE", `U&"!0063oncat" UESCAPE '!' (1)`, `U&"!0063oncat" UESCAPE '!' (1)`, true},
		{"dollar quotes", "concat($$it's ; -- /* $$, $$$$, $a$ $$ $a$, $a_1$x$a$a_1$, $A$ $a$ $A$, $a$ $b$a $a$)",
			"concat($$it's ; -- /* $$, $$$$, $a$ $$ $a$, $a_1$x$a$a_1$, $A$ $a$ $A$, $a$ $b$a $a$)", true},
		{"dollar quote with a backslash", `concat($$\$$)`, `concat($$\$$)`, true},
		{"bit strings", "concat(B'0101', X'1F', b'', x'')", "concat(B'0101', X'1F', b'', x'')", true},
		{"national string", "concat(N'abc')", "concat(N'abc')", true},
		{"named arguments", `named(x => 1, y := 'a', "Z" => 2)`, `named(x => 1, y := 'a', "Z" => 2)`, true},
		{"named argument and sign without spaces", "named(x=>-1)", "named(x=>-1)", true},
		{"named argument and plus without spaces", "named(x=>+1)", "named(x=>+1)", true},
		{"casts", `concat(1::int, '{1,2}'::int[], '1.5'::numeric(10,2), 'x'::character varying(3), '1'::double precision, 'x'::pg_catalog.text, '{}'::text[][], '1'::int::text, '{1}'::int[3], 'x'::"text")`,
			`concat(1::int, '{1,2}'::int[], '1.5'::numeric(10,2), 'x'::character varying(3), '1'::double precision, 'x'::pg_catalog.text, '{}'::text[][], '1'::int::text, '{1}'::int[3], 'x'::"text")`, true},
		{"typed strings", `concat(interval '1 day', date '2026-01-01', timestamp with time zone '2026-01-01 00:00+00', timestamp(3) without time zone '2026-01-01', double precision '1.5', character varying(3) 'abc', bit varying(4) '101', pg_catalog.int4 '7', "text" 'x', int E'1', text $$x$$, text U&'\0041')`,
			`concat(interval '1 day', date '2026-01-01', timestamp with time zone '2026-01-01 00:00+00', timestamp(3) without time zone '2026-01-01', double precision '1.5', character varying(3) 'abc', bit varying(4) '101', pg_catalog.int4 '7', "text" 'x', int E'1', text $$x$$, text U&'\0041')`, true},
		{"types that are keywords", "concat(float(3) '1', '1'::float(3), varchar(3) 'abc', char '1', nchar(2) 'x', bit(3) '101', interval(2) '1', time(1) '10:00', boolean 'true', real '1', bigint '1', dec(3) '1', '1'::dec(3,1), 'x'::character, '1'::bit)",
			"concat(float(3) '1', '1'::float(3), varchar(3) 'abc', char '1', nchar(2) 'x', bit(3) '101', interval(2) '1', time(1) '10:00', boolean 'true', real '1', bigint '1', dec(3) '1', '1'::dec(3,1), 'x'::character, '1'::bit)", true},
		{"interval fields in a cast", "concat('1:2:3'::interval hour to second(2), '1'::interval year)", "concat('1:2:3'::interval hour to second(2), '1'::interval year)", true},
		{"arrays", "concat(ARRAY[1, 2], array['a', E'b'], ARRAY[ARRAY[1], ARRAY[2]], ARRAY[]::int[], ARRAY[date '2026-01-01'], ARRAY[-1])",
			"concat(ARRAY[1, 2], array['a', E'b'], ARRAY[ARRAY[1], ARRAY[2]], ARRAY[]::int[], ARRAY[date '2026-01-01'], ARRAY[-1])", true},
		{"numbers and signs", "concat(-1, +2.5, .5, 1., 1e10, 1.5E-3, 2e+2, - 7, 12345678901234567890)", "concat(-1, +2.5, .5, 1., 1e10, 1.5E-3, 2e+2, - 7, 12345678901234567890)", true},
		{"true false null", "concat(true, FALSE, Null, NULL::text)", "concat(true, FALSE, Null, NULL::text)", true},
		{"comment signs in literals only", `concat('--', '/*', $$;$$, E'--\'', U&'--')`, `concat('--', '/*', $$;$$, E'--\'', U&'--')`, true},
		{"a job of the specification", "pg_catalog.pg_sleep(0)", "pg_catalog.pg_sleep(0)", true},

		// Refused: the attacks.
		{"escaped quote then a second statement", `f(E'\'');SELECT evil();--')`,
			`a semicolon (a job runs one function call) at character 9 near "f(E'\'');SELECT evil();--')"`, false},
		{"backslash in a standard string", `f('\'');SELECT evil();--')`,
			`a backslash in a '...' string, which standard_conforming_strings = off would read as an escape (write E'\\' or $$\$$) at character 4 near "f('\'');SELECT evil();--')"`, false},
		{"backslash alone in a standard string", `f('\')`,
			`a backslash in a '...' string, which standard_conforming_strings = off would read as an escape (write E'\\' or $$\$$) at character 4 near "f('\')"`, false},
		{"backslash in a national string", `f(N'a\')`,
			`a backslash in a '...' string, which standard_conforming_strings = off would read as an escape (write E'\\' or $$\$$) at character 6 near "f(N'a\')"`, false},
		{"dollar quote closed early", "f($$a$$);select 1;$$)", `a semicolon (a job runs one function call) at character 9 near "f($$a$$);select 1;$$)"`, false},
		{"dollar quote closed by its own tag only", "f($a$ $$ $a$) x", `text after the call's closing parenthesis at character 15 near "f($a$ $$ $a$) x"`, false},
		{"semicolon after the call", "f(1);", `a semicolon (a job runs one function call) at character 5 near "f(1);"`, false},
		{"two statements", "f(1); DROP TABLE calls", `a semicolon (a job runs one function call) at character 5 near "f(1); DROP TABLE calls"`, false},
		{"comment after the call", "f(1)--", `a comment (--) at character 5 near "f(1)--"`, false},
		{"block comment after the call", "f() /* ; */", `a comment (/*) at character 5 near "f() /* ; */"`, false},
		{"nested comments hiding a semicolon", "f(1) /* /* */ ; */", `a comment (/*) at character 6 near "f(1) /* /* */ ; */"`, false},
		{"comment inside the arguments", "f(/* /* */ ; */ 1)", `a comment (/*) at character 3 near "f(/* /* */ ; */ 1)"`, false},
		{"comment after a named argument arrow", "f(x=>--1)", `a comment (--) at character 6 near "f(x=>--1)"`, false},
		{"COPY", "COPY calls TO PROGRAM 'id'", `expected ( after the function name at character 6 near "COPY calls TO PROGRAM 'id'"`, false},
		{"a union", "f(1) UNION SELECT 1", `text after the call's closing parenthesis at character 6 near "f(1) UNION SELECT 1"`, false},
		{"a subquery", "f((SELECT 1))", `an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...]) at character 4 near "f((SELECT 1))"`, false},
		{"a parenthesized value", "concat((0.5)::double precision, ('x'::character varying)::text, ((1)))", "concat((0.5)::double precision, ('x'::character varying)::text, ((1)))", true},
		{"casts of array elements", "concat(ARRAY[1, '-2'::integer], ARRAY[(0.5)::float8, NULL::float8])", "concat(ARRAY[1, '-2'::integer], ARRAY[(0.5)::float8, NULL::float8])", true},
		{"variadic", "concat(VARIADIC ARRAY['a'::text, 'b'::text])", "concat(VARIADIC ARRAY['a'::text, 'b'::text])", true},
		{"an array in parentheses", "concat((ARRAY[1]))", `an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...]) at character 9 near "concat((ARRAY[1]))"`, false},
		{"an operator in parentheses", "f((1 + 2))", `an argument that is not a constant: expected :: or ) after a value in parentheses at character 6 near "f((1 + 2))"`, false},
		{"an ARRAY subquery", "f(ARRAY(SELECT 1))", `ARRAY without [ after it at character 8 near "f(ARRAY(SELECT 1))"`, false},
		{"a nested call", "f(now())", `an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...]) at character 3 near "f(now())"`, false},
		{"a nested quoted call", `f("g"(1))`, `an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...]) at character 3 near "f("g"(1))"`, false},
		{"positional argument after a named one", "f(x => 1, 2)", `an argument without a name after a named one at character 11 near "f(x => 1, 2)"`, false},
		{"NULL after a named argument", "f(x => 1, NULL)", `an argument without a name after a named one at character 11 near "f(x => 1, NULL)"`, false},
		{"typed string after a named argument", "f(x => 1, date '2026-01-01')", `an argument without a name after a named one at character 11 near "f(x => 1, date '2026-01-01')"`, false},
		{"identifier with dollars and a named argument", "f(E$$ => $$x$$, 1)", `an argument without a name after a named one at character 17 near "f(E$$ => $$x$$, 1)"`, false},
		{"a column", "f(x)", `an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...]) at character 3 near "f(x)"`, false},
		{"an operator", "f(1 + 2)", `an argument that is not a constant: expected , or ) after it at character 5 near "f(1 + 2)"`, false},
		{"a concatenation", "f('a'||'b')", `an operator at character 6 near "f('a'||'b')"`, false},
		{"an operator after a cast", "f(1::int - 1)", `an argument that is not a constant: expected , or ) after it at character 10 near "f(1::int - 1)"`, false},
		{"an equals sign", "f(x = 1)", `an operator at character 5 near "f(x = 1)"`, false},
		{"a sign before a string", "f(-'1')", `a sign without a number after it at character 4 near "f(-'1')"`, false},
		{"two signs", "f(+-1)", `an operator at character 3 near "f(+-1)"`, false},
		{"a parameter", "f($1)", `a parameter ($n) at character 3 near "f($1)"`, false},
		{"a parameter as a tag", "f($1a$x$1a$)", `a parameter ($n) at character 3 near "f($1a$x$1a$)"`, false},
		{"a dollar sign", "f($ 1)", `a dollar sign at character 3 near "f($ 1)"`, false},
		{"a non-ASCII dollar tag", "f($é$x$é$)", `a dollar-quote tag with a non-ASCII character at character 3 near "f($é$x$é$)"`, false},
		{"strings PostgreSQL would join", "f('a'\n'b')", `an argument that is not a constant: expected , or ) after it at character 7 near "f('a' 'b')"`, false},
		{"text after the call", "f(1) x", `text after the call's closing parenthesis at character 6 near "f(1) x"`, false},
		{"a second parenthesis", "f(1))", `text after the call's closing parenthesis at character 5 near "f(1))"`, false},
		{"a call of the result", "f(1)(2)", `text after the call's closing parenthesis at character 5 near "f(1)(2)"`, false},
		{"no argument list", "now", `no argument list: write the call with parentheses, such as off_line() at character 4 near "now"`, false},
		{"three-part name", "a.b.c()", `expected ( after the function name at character 4 near "a.b.c()"`, false},
		{"not a name", "1 + f()", `expected a function name at character 1 near "1 + f()"`, false},
		{"reserved keyword as a name", "select(1)", `the keyword select as a function name (write the function with its schema) at character 1 near "select(1)"`, false},
		{"column-name keyword as a name", "coalesce(1, 2)", `the keyword coalesce as a function name (write the function with its schema) at character 1 near "coalesce(1, 2)"`, false},
		{"reserved keyword as a schema", "select.f()", `the keyword select as a schema name (write it in double quotes) at character 1 near "select.f()"`, false},
		{"reserved keyword as an argument name", "f(select => 1)", `the keyword select as an argument name (write it in double quotes) at character 3 near "f(select => 1)"`, false},
		{"reserved keyword as a type", "f('1'::select)", `the keyword select as a type name at character 8 near "f('1'::select)"`, false},
		{"column-name keyword as a type", "f(between '1')", `the keyword between as a type name at character 3 near "f(between '1')"`, false},
		{"modifier of int", "f('1'::int(3))", `a type modifier that int does not take at character 8 near "f('1'::int(3))"`, false},
		{"modifier of a typed string", "f(integer(3) '1')", `a type modifier that integer does not take at character 3 near "f(integer(3) '1')"`, false},
		{"type-function keyword as a type's schema", "f('1'::left.t)", `the keyword left as a schema name (write it in double quotes) at character 8 near "f('1'::left.t)"`, false},
		{"two modifiers of a multi-word type", "f('1'::timestamp(3,1) with time zone)", `an unknown multi-word type name, or a modifier it does not take at character 8 near "f('1'::timestamp(3,1) with time zone)"`, false},
		{"array bound beyond an int", "f('{1}'::int[9999999999])", `expected ] or an integer after [ at character 14 near "f('{1}'::int[9999999999])"`, false},
		{"missing argument", "f(1,)", `a missing argument at character 5 near "f(1,)"`, false},
		{"missing first argument", "f(,1)", `an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...]) at character 3 near "f(,1)"`, false},
		{"unbalanced", "f(1, (2)", `the call ends before its closing parenthesis at character 9 near "f(1, (2)"`, false},
		{"no closing parenthesis", "f(1", `the call ends before its closing parenthesis at character 4 near "f(1"`, false},
		{"only an opening parenthesis", "f(", `the call ends before its closing parenthesis at character 3 near "f("`, false},
		{"nested call with UESCAPE", `U&"\0063oncat"(1, U&"!0063oncat" UESCAPE '!'(2))`, `an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...]) at character 19 near "U&"\0063oncat"(1, U&"!0063oncat" UESCAPE '!'(2))"`, false},
		{"nested quoted call", `concat('--', '/*', $$;$$, E'--\'', "concat"('*/'))`, `an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...]) at character 36 near "...t('--', '/*', $$;$$, E'--\'', "concat"('*/'))"`, false},

		// Refused: unterminated.
		{"unterminated string", "f('abc", `an unterminated quoted string at character 3 near "f('abc"`, false},
		{"unterminated escape string", `f(E'abc\'`, `an unterminated quoted string at character 3 near "f(E'abc\'"`, false},
		{"escape string ending in a backslash", `f(E'\`, `an unterminated quoted string at character 3 near "f(E'\"`, false},
		{"unterminated dollar quote", "f($x$abc$y$", `an unterminated dollar-quoted string at character 3 near "f($x$abc$y$"`, false},
		{"unterminated quoted name", `"f(1)`, `an unterminated quoted identifier at character 1 near ""f(1)"`, false},
		{"unterminated bit string", "f(B'01", `an unterminated bit string at character 3 near "f(B'01"`, false},
		{"unterminated hexadecimal string", "f(X'1", `an unterminated hexadecimal string at character 3 near "f(X'1"`, false},
		{"unterminated unicode string", "f(U&'a", `an unterminated quoted string at character 3 near "f(U&'a"`, false},
		{"unterminated block comment", "f(1) /* x", `a comment (/*) at character 6 near "f(1) /* x"`, false},

		// Refused: literals PostgreSQL refuses or reads otherwise.
		{"trailing junk after a number", "f(1abc)", `trailing junk after a number at character 3 near "f(1abc)"`, false},
		{"hexadecimal integer", "f(0x1F)", `trailing junk after a number at character 3 near "f(0x1F)"`, false},
		{"underscores in a number", "f(1_000)", `trailing junk after a number at character 3 near "f(1_000)"`, false},
		{"two dots", "f(1..2)", `trailing junk after a number at character 3 near "f(1..2)"`, false},
		{"incomplete exponent", "f(1e)", `a number with an incomplete exponent at character 3 near "f(1e)"`, false},
		{"escape of byte 0", `f(E'\0')`, `an escape for the byte 0 or a byte above 127 (write the character itself) at character 5 near "f(E'\0')"`, false},
		{"escape of a byte above 127", `f(E'\xC3\xA9')`, `an escape for the byte 0 or a byte above 127 (write the character itself) at character 5 near "f(E'\xC3\xA9')"`, false},
		{"short unicode escape", `f(E'\u12')`, `an invalid Unicode escape (write \uXXXX or \UXXXXXXXX) at character 5 near "f(E'\u12')"`, false},
		{"surrogate escape", `f(E'\uD800')`, `a Unicode escape for 0, a surrogate or no character at character 5 near "f(E'\uD800')"`, false},
		{"U& surrogate", `f(U&'\D800')`, `an invalid Unicode escape in a U& literal (write \XXXX or \+XXXXXX, not a surrogate) at character 3 near "f(U&'\D800')"`, false},
		{"U& short escape", `f(U&'\12')`, `an invalid Unicode escape in a U& literal (write \XXXX or \+XXXXXX, not a surrogate) at character 3 near "f(U&'\12')"`, false},
		{"U& escape of another escape character", `f(U&'!12' UESCAPE '!')`, `an invalid Unicode escape in a U& literal (write !XXXX or !+XXXXXX, not a surrogate) at character 3 near "f(U&'!12' UESCAPE '!')"`, false},
		{"UESCAPE of two characters", `f(U&'a' UESCAPE '!!')`, `UESCAPE without a one-character string such as '!' after it at character 17 near "f(U&'a' UESCAPE '!!')"`, false},
		{"UESCAPE of a hexadecimal digit", `f(U&'a' UESCAPE 'a')`, `UESCAPE without a one-character string such as '!' after it at character 17 near "f(U&'a' UESCAPE 'a')"`, false},
		{"UESCAPE without a string", `f(U&'a' UESCAPE)`, `UESCAPE without a one-character string such as '!' after it at character 16 near "f(U&'a' UESCAPE)"`, false},
		{"U& followed by no quote", "f(U&1)", `an operator at character 4 near "f(U&1)"`, false},
		{"bit string digit", "f(B'012')", `a bit string digit other than 0 and 1 at character 7 near "f(B'012')"`, false},
		{"hexadecimal string digit", "f(X'1G')", `a hexadecimal string digit other than 0-9, A-F at character 6 near "f(X'1G')"`, false},
		{"zero-length quoted name", `""(1)`, `a zero-length quoted identifier at character 1 near """(1)"`, false},
		{"unknown multi-word type", "f(foo bar 'x')", `an unknown multi-word type name, or a modifier it does not take at character 3 near "f(foo bar 'x')"`, false},
		{"unknown multi-word cast", "f('x'::foo bar)", `an unknown multi-word type name, or a modifier it does not take at character 8 near "f('x'::foo bar)"`, false},
		{"interval fields before the string", "f(interval day '1')", `an unknown multi-word type name, or a modifier it does not take at character 3 near "f(interval day '1')"`, false},
		{"type and a bit string", "f(text B'1')", `an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...]) at character 3 near "f(text B'1')"`, false},
		{"vertical tab", "f(1)\v", `a character that cannot appear here at character 5 near "f(1) "`, false},
		{"backslash outside a literal", `f(1)\`, `a character that cannot appear here at character 5 near "f(1)\"`, false},
		{"long excerpt", "f('" + long + "', " + long + ";" + long + ")",
			`a semicolon (a job runs one function call) at character 167 near "...` + long[:30] + ";" + long[:29] + `..."`, false},
		{"dollar tag inside a longer one", "f($a$ $$a$ $a$)", `an unterminated dollar-quoted string at character 12 near "f($a$ $$a$ $a$)"`, false},
	}
	for _, scs := range []string{"on", "off"} {
		t.Run("standard_conforming_strings="+scs, func(t *testing.T) {
			t.Parallel()
			conn := callSession(t, db, scs)
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					got, err := callSyntax(ctx, conn, tt.input)
					if !tt.ok {
						var pgErr *pgconn.PgError
						if !errors.As(err, &pgErr) || pgErr.Code != "42601" || pgErr.Message != callSyntaxPrefix+tt.want ||
							pgErr.Hint != "write one call such as off_line() or f(1, 'x')" {
							t.Fatalf("pgj_call_syntax_(%q) = %q, %v\nwant error %q", tt.input, got, err, callSyntaxPrefix+tt.want)
						}
						return
					}
					if err != nil || got != tt.want {
						t.Fatalf("pgj_call_syntax_(%q) = %q, %v; want %q", tt.input, got, err, tt.want)
					}
					// U&'...' is an error with standard_conforming_strings off: prepare with it on.
					if scs == "on" {
						if err := preparesAsOneCall(ctx, conn, got); err != nil {
							t.Fatalf("PostgreSQL does not prepare SELECT %s as one call: %v", got, err)
						}
					}
				})
			}
		})
	}
}

// TestCallSyntaxNullAndEmpty checks that a missing call is refused as in schema version 1.
func TestCallSyntaxNullAndEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := cluster.Connect(t, enabledDatabase(t))
	for _, tt := range []struct {
		input *string
		code  string
		msg   string
	}{
		{nil, "22004", "test: argument 2 (function call) must not be NULL"},
		{new(string), "22023", "test: argument 2 (function call) must not be empty"},
	} {
		var got *string
		err := conn.QueryRow(ctx, "SELECT pgjobs.pgj_call_syntax_('test', 2, $1)", tt.input).Scan(&got)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != tt.code || pgErr.Message != tt.msg {
			t.Errorf("pgj_call_syntax_(%v) = %v, %v; want %s %s", tt.input, got, err, tt.code, tt.msg)
		}
	}
}

// TestCallSyntaxThroughCreateJob checks that pgj_create_job refuses the attack with the new
// check, and that the refused call never reached PostgreSQL.
func TestCallSyntaxThroughCreateJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := cluster.Connect(t, enabledDatabase(t))
	_, err := conn.Exec(ctx, `SELECT pgj_create_job('Evil', $1, null, null)`, `f(E'\'');SELECT evil();--')`)
	var pgErr *pgconn.PgError
	want := `pgj_create_job: argument 2 (function call) is not one function call: a semicolon (a job runs one function call) at character 9 near "f(E'\'');SELECT evil();--')"`
	if !errors.As(err, &pgErr) || pgErr.Code != "42601" || pgErr.Message != want {
		t.Fatalf("pgj_create_job of two statements: %v; want %s", err, want)
	}
}

// callPieces are what TestCallSyntaxAgreesWithPostgres builds its calls of: literals of every
// form, with insides that could break out of them, and what could follow them.
var callPieces = struct {
	literals                     [][2]string
	open, inside, end, sep, tail []string
}{
	literals: [][2]string{{"'", "'"}, {"E'", "'"}, {"e'", "'"}, {"U&'", "'"}, {"u&'", "' UESCAPE '!'"},
		{"N'", "'"}, {"B'", "'"}, {"X'", "'"}, {"$$", "$$"}, {"$a$", "$a$"}, {"x '", "'"}, {"E '", "'"},
		{"text '", "'"}, {"'", "'::text"}, {"E'", "'::varchar(3)"}, {"ARRAY['", "']"}, {"ARRAY[E'", "', $$x$$]"},
		{"-1, '", "'"}},
	open: []string{"'", "E'", "e'", "U&'", "u&'", "N'", "B'", "X'", "$$", "$a$", `"`, `U&"`,
		"x '", "E '", "n '", "text '", "1", "-", "", "(", "E", "U&", "x", "$"},
	inside: []string{"a", "é", "1", "0", "x", "E", "U&", `\`, `\\`, "'", "''", `"`, ";", "--", "/*", "*/",
		"$$", "$a$", "$", "\n", " ", ")", "(", ",", `\0041`, "!0041", `\u00e9`, `\x41`, `\101`,
		"UESCAPE '!'", "::text", "=>", "E'", "U&'", "$b$", "$a", "a$"},
	end:  []string{"'", "'", "$$", "$a$", `"`, "", ")", "]", "' UESCAPE '!'", "'::text", "'\n", "$$::text"},
	sep:  []string{";", "--", "/*", " ", ",'", ",E'", ",$$", "\n, ", ","},
	tail: []string{" ", "\n", ";", "--", " x", ")", "*/", "'", "\\"},
}

// randomCall returns a call of concat or format with arguments made of random pieces: mostly
// literals with random insides, separated and ended as they should be, sometimes anything.
func randomCall(r *rand.Rand) string {
	pick := func(from []string) string { return from[r.IntN(len(from))] }
	var b strings.Builder
	if r.IntN(2) == 0 {
		b.WriteString("concat(")
	} else {
		b.WriteString("format('%s', ")
	}
	for i, n := 0, 1+r.IntN(3); i < n; i++ {
		if i > 0 {
			if r.IntN(4) == 0 {
				b.WriteString(pick(callPieces.sep))
			} else {
				b.WriteString(", ")
			}
		}
		literal := callPieces.literals[r.IntN(len(callPieces.literals))]
		if r.IntN(4) == 0 {
			literal = [2]string{pick(callPieces.open), pick(callPieces.end)}
		}
		b.WriteString(literal[0])
		for j, m := 0, r.IntN(5); j < m; j++ {
			b.WriteString(pick(callPieces.inside))
		}
		b.WriteString(literal[1])
	}
	b.WriteString(")")
	if r.IntN(4) == 0 {
		b.WriteString(pick(callPieces.tail))
	}
	return b.String()
}

// TestCallSyntaxAgreesWithPostgres uses PostgreSQL's parser as the oracle: of thousands of random
// calls made of quotes, escapes, comment signs and separators, every call pgj_call_syntax_ accepts
// must prepare as one statement of one column (concat and format take VARIADIC "any", so any
// constant arguments resolve; the domains x, e and n make the types of x '...', E '...' and
// n '...'), and the verdicts must not depend on standard_conforming_strings.
func TestCallSyntaxAgreesWithPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := callDatabase(t)
	r := rand.New(rand.NewPCG(2026, 1))
	calls := make([]string, 4000)
	for i := range calls {
		calls[i] = randomCall(r)
	}
	verdicts := func(conn *pgx.Conn) []*string {
		rows, _ := conn.Query(ctx, "SELECT try_call(c) FROM unnest($1::text[]) WITH ORDINALITY AS u(c, i) ORDER BY i", calls)
		got, err := pgx.CollectRows(rows, pgx.RowTo[*string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	on := callSession(t, db, "on")
	withOn, withOff := verdicts(on), verdicts(callSession(t, db, "off"))

	accepted, strict := 0, 0
	for i, call := range calls {
		if (withOn[i] == nil) != (withOff[i] == nil) || (withOn[i] != nil && *withOn[i] != *withOff[i]) {
			t.Errorf("%q: verdict %v with standard_conforming_strings on, %v with it off", call, withOn[i], withOff[i])
		}
		err := preparesAsOneCall(ctx, on, call)
		if withOn[i] == nil {
			if err == nil {
				strict++ // PostgreSQL takes it as one call: pgj_call_syntax_ is stricter
				if strict <= 5 {
					t.Logf("refused, though PostgreSQL prepares it: %q", call)
				}
			}
			continue
		}
		accepted++
		if *withOn[i] != strings.Trim(call, " \t\n\r\f") {
			t.Errorf("%q: accepted as %q, want it without surrounding blanks", call, *withOn[i])
		}
		if err != nil {
			t.Errorf("pgj_call_syntax_ accepts %q, but PostgreSQL does not prepare SELECT <it> as one call: %v", call, err)
		}
	}
	t.Logf("%d random calls: %d accepted, all prepared by PostgreSQL; %d refused that PostgreSQL prepares", len(calls), accepted, strict)
	if accepted < 500 {
		t.Fatalf("only %d calls accepted: the test proves little; change the pieces", accepted)
	}
}

// TestCallSyntaxLength checks the limit of 8192 bytes, counted in bytes of multibyte text.
func TestCallSyntaxLength(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := cluster.Connect(t, enabledDatabase(t))
	atLimit := "concat('ab" + strings.Repeat("é", 4090) + "')"
	if len(atLimit) != 8192 {
		t.Fatalf("the test's call is %d bytes, want 8192", len(atLimit))
	}
	if _, err := callSyntax(ctx, conn, "now()"); err != nil { // the session compiles the function
		t.Fatal(err)
	}
	start := time.Now()
	got, err := callSyntax(ctx, conn, atLimit)
	if err != nil || got != atLimit {
		t.Fatalf("call of 8192 bytes: %.40q..., %v; want it accepted", got, err)
	}
	t.Logf("a call of 8192 bytes (4096 characters) checked in %v", time.Since(start))
	if err := preparesAsOneCall(ctx, conn, got); err != nil {
		t.Fatalf("SELECT <call of 8192 bytes>: %v", err)
	}

	for _, call := range []string{atLimit + " ", "f('" + strings.Repeat("é", 1_000_000) + "')"} {
		start := time.Now()
		_, err := callSyntax(ctx, conn, call)
		var pgErr *pgconn.PgError
		want := fmt.Sprintf("test: argument 2 (function call) is %d bytes long, longer than the limit of 8192 bytes", len(call))
		if !errors.As(err, &pgErr) || pgErr.Code != "54000" || pgErr.Message != want {
			t.Fatalf("call of %d bytes: %v; want 54000 %s", len(call), err, want)
		}
		t.Logf("a call of %d bytes refused in %v", len(call), time.Since(start))
	}
}
