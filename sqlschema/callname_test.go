package sqlschema_test

import (
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/sqlschema"
)

func TestParseStoredCall(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, call string
		want       sqlschema.StoredCall
		err        string
	}{
		{name: "no argument", call: "public.f()", want: sqlschema.StoredCall{Schema: "public", Name: "f"}},
		{name: "two", call: "app_2.off_line(1, 'x'::text)", want: sqlschema.StoredCall{Schema: "app_2", Name: "off_line"}},
		{name: "one", call: "public.f((1)::bigint)", want: sqlschema.StoredCall{Schema: "public", Name: "f", Castable: true}},
		{name: "one string with commas and parentheses", call: "public.f('a, b)'' (c'::text)", want: sqlschema.StoredCall{Schema: "public", Name: "f", Castable: true}},
		{name: "one array", call: "public.f(ARRAY[1, 2, (3)::integer])", want: sqlschema.StoredCall{Schema: "public", Name: "f", Castable: true}},
		{name: "variadic", call: "public.f(VARIADIC ARRAY[1, 2])", want: sqlschema.StoredCall{Schema: "public", Name: "f", Castable: true}},
		{name: "named", call: `"My Schema"."Off.Line"(a => 1)`, want: sqlschema.StoredCall{Schema: "My Schema", Name: "Off.Line"}},
		{name: "a type with a comma", call: `public.f('x'::"a,b")`, want: sqlschema.StoredCall{Schema: "public", Name: "f", Castable: true}},
		{name: "quotes in names", call: `"a""b"."c("""(1, 2)`, want: sqlschema.StoredCall{Schema: `a"b`, Name: `c("`}},
		{name: "a keyword", call: `pg_catalog."left"('x'::text, 1)`, want: sqlschema.StoredCall{Schema: "pg_catalog", Name: "left"}},
		{name: "not ASCII", call: `"été".f()`, want: sqlschema.StoredCall{Schema: "été", Name: "f"}},
		{name: "not counted: no closing", call: "public.f(1, 2", want: sqlschema.StoredCall{Schema: "public", Name: "f", Castable: true}},
		{name: "not counted: a dollar", call: "public.f($x$a$x$, 2)", want: sqlschema.StoredCall{Schema: "public", Name: "f", Castable: true}},
		{name: "not counted: an open string", call: "public.f('a, 2)", want: sqlschema.StoredCall{Schema: "public", Name: "f", Castable: true}},
		{name: "unqualified", call: "f()", err: "position 2: want '.' after the schema"},
		{name: "no parenthesis", call: "public.f", err: "position 9: want '(' after the function's name"},
		{name: "upper case", call: "public.F()", err: "position 8: want an identifier"},
		{name: "upper case schema", call: "Public.f()", err: "position 1: want an identifier"},
		{name: "a digit first", call: "1a.f()", err: "position 1: want an identifier"},
		{name: "empty quotes", call: `"".f()`, err: "position 1: an empty quoted identifier"},
		{name: "open quote", call: `public."f()`, err: "position 8: a quoted identifier without its closing quote"},
		{name: "a blank", call: "public. f()", err: "position 8: want an identifier"},
		{name: "empty", call: "", err: "position 1: want an identifier"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, err := sqlschema.ParseStoredCall(c.call)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "does not start with a schema-qualified function name") {
					t.Fatalf("ParseStoredCall(%q) = %+v, %v; want the error %q", c.call, got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("ParseStoredCall(%q) = %+v, %v; want %+v", c.call, got, err, c.want)
			}
		})
	}
}

// FuzzParseStoredCall: any text gets names or an error, never a panic; the names of a call built
// from quoted names come back as they were, and a call of one argument is castable whatever it is.
func FuzzParseStoredCall(f *testing.F) {
	for _, s := range []string{"1)", `'x'::"a,b")`, `"`, `x."`, "ARRAY[1, 2])", "a => 1)"} {
		f.Add(s, "s", "n")
	}
	f.Fuzz(func(t *testing.T, args, schema, name string) {
		sqlschema.ParseStoredCall(args)
		if schema == "" || name == "" {
			return
		}
		quote := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
		got, err := sqlschema.ParseStoredCall(quote(schema) + "." + quote(name) + "(" + args)
		if err != nil || got.Schema != schema || got.Name != name {
			t.Fatalf("names %q, %q came back as %+v, %v", schema, name, got, err)
		}
		one, err := sqlschema.ParseStoredCall(quote(schema) + "." + quote(name) + "(" + quote(args) + ")")
		if err != nil || !one.Castable {
			t.Fatalf("a call of one quoted argument %q: %+v, %v; want castable", args, one, err)
		}
	})
}
