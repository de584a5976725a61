package sqlschema_test

import (
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/sqlschema"
)

func TestCallName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		call, schema, name, err string
	}{
		{call: "public.f()", schema: "public", name: "f"},
		{call: "app_2.off_line(1, 'x'::text)", schema: "app_2", name: "off_line"},
		{call: `"My Schema"."Off.Line"(a => 1)`, schema: "My Schema", name: "Off.Line"},
		{call: `"a""b"."c("""(1)`, schema: `a"b`, name: `c("`},
		{call: `pg_catalog."left"('x'::text, 1)`, schema: "pg_catalog", name: "left"},
		{call: `"été".f()`, schema: "été", name: "f"},
		{call: "f()", err: "position 2: want '.' after the schema"},
		{call: "public.f", err: "position 9: want '(' after the function's name"},
		{call: "public.F()", err: "position 8: want an identifier"},
		{call: "Public.f()", err: "position 1: want an identifier"},
		{call: "1a.f()", err: "position 1: want an identifier"},
		{call: `"".f()`, err: "position 1: an empty quoted identifier"},
		{call: `public."f()`, err: "position 8: a quoted identifier without its closing quote"},
		{call: "public. f()", err: "position 8: want an identifier"},
		{call: "", err: "position 1: want an identifier"},
	} {
		schema, name, err := sqlschema.CallName(c.call)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), "does not start with a schema-qualified function name") {
				t.Errorf("CallName(%q) = %q, %q, %v; want the error %q", c.call, schema, name, err, c.err)
			}
			continue
		}
		if err != nil || schema != c.schema || name != c.name {
			t.Errorf("CallName(%q) = %q, %q, %v; want %q, %q", c.call, schema, name, err, c.schema, c.name)
		}
	}
}

// FuzzCallName: any text gets names or an error, never a panic; the names of a call built from
// quoted names come back as they were.
func FuzzCallName(f *testing.F) {
	for _, s := range []string{"public.f()", `"a""b"."c"(1)`, `"`, `x."`, "x.y"} {
		f.Add(s, "s", "n")
	}
	f.Fuzz(func(t *testing.T, call, schema, name string) {
		sqlschema.CallName(call)
		if schema == "" || name == "" {
			return
		}
		quote := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
		gotSchema, gotName, err := sqlschema.CallName(quote(schema) + "." + quote(name) + "(" + call)
		if err != nil || gotSchema != schema || gotName != name {
			t.Fatalf("names %q, %q came back as %q, %q, %v", schema, name, gotSchema, gotName, err)
		}
	})
}
