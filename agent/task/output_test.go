package task

import (
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// defaults is the format of the table's defaults.
var defaults = sqlschema.TaskFormat{Header: true, String: true, Delimiter: "\t", Null: `\N`}

// statement is one statement's answer: its columns and rows (nil columns: no result set) and tag.
type statement struct {
	columns []Column
	rows    [][]*string
	tag     string
	copied  string
}

func s(v string) *string { return &v }

func TestOutput(t *testing.T) {
	text, num := func(n string) Column { return NewColumn(n, 25) }, func(n string) Column { return NewColumn(n, 23) }
	quoted := defaults
	quoted.Quote = `"`
	escaped := quoted
	escaped.Escape = `\`
	allQuoted := quoted
	allQuoted.String = false
	csv := defaults
	csv.Delimiter, csv.Header = ",", false
	for _, c := range []struct {
		name   string
		format sqlschema.TaskFormat
		stmts  []statement
		want   *string
	}{
		{"one value", defaults, []statement{{columns: []Column{num("a")}, rows: [][]*string{{s("1")}}, tag: "SELECT 1"}}, s("1")},
		{"header", defaults, []statement{{columns: []Column{num("a"), num("b")}, rows: [][]*string{{s("1"), s("2")}}, tag: "SELECT 1"}}, s("a\tb\n1\t2")},
		{"two statements", defaults, []statement{
			{columns: []Column{num("a")}, rows: [][]*string{{s("1")}}, tag: "SELECT 1"},
			{columns: []Column{num("b")}, rows: [][]*string{{s("2")}}, tag: "SELECT 1"}}, s("1\n2")},
		{"null", defaults, []statement{{columns: []Column{num("a"), num("b")}, rows: [][]*string{{nil, s("1")}}, tag: "SELECT 1"}}, s("a\tb\n\\N\t1")},
		{"quote", quoted, []statement{{columns: []Column{num("n"), text("s")}, rows: [][]*string{{s("1"), s("x")}}, tag: "SELECT 1"}}, s("\"n\"\t\"s\"\n1\t\"x\"")},
		{"quote every value", allQuoted, []statement{{columns: []Column{num("n"), text("s")}, rows: [][]*string{{s("1"), nil}}, tag: "SELECT 1"}}, s("\"n\"\t\"s\"\n\"1\"\t\\N")},
		{"escape", escaped, []statement{{columns: []Column{text("s")}, rows: [][]*string{{s(`a"b\c`)}}, tag: "SELECT 1"}}, s(`"a\"b\\c"`)},
		{"delimiter, no header", csv, []statement{{columns: []Column{num("a"), num("b")}, rows: [][]*string{{s("1"), s("2")}}, tag: "SELECT 1"}}, s("1,2")},
		{"no rows", defaults, []statement{{columns: []Column{num("a"), num("b")}, tag: "SELECT 0"}}, nil},
		{"tags", defaults, []statement{{tag: "INSERT 0 1"}, {tag: "DELETE 0"}, {tag: "CREATE TABLE"}}, s("INSERT 0 1\nDELETE 0\nCREATE TABLE")},
		{"no SELECT tag", defaults, []statement{{tag: "SELECT 3"}}, nil},
		{"copy", defaults, []statement{{tag: "INSERT 0 1"}, {copied: "1\tx\n2\ty\n", tag: "COPY 2"}}, s("INSERT 0 1\n1\tx\n2\ty")},
		{"empty string", defaults, []statement{{columns: []Column{text("a")}, rows: [][]*string{{s("")}}, tag: "SELECT 1"}}, s("")},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := NewOutput(c.format)
			for _, st := range c.stmts {
				if st.copied != "" {
					o.Copy(st.copied)
					o.Done(st.tag, true)
					continue
				}
				if st.columns != nil {
					o.Columns(st.columns)
				}
				for _, r := range st.rows {
					values := make([][]byte, len(r))
					for i, v := range r {
						if v != nil {
							values[i] = []byte(*v)
						}
					}
					o.Row(values)
				}
				o.Done(st.tag, st.columns != nil)
			}
			got := o.Text()
			if (got == nil) != (c.want == nil) || (got != nil && *got != *c.want) {
				t.Errorf("output %q, want %q", deref(got), deref(c.want))
			}
		})
	}
}

func deref(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestOutputCut: an output past MaxOutput keeps what fits and says it was cut, for a COPY as for
// rows (a COPY past it came back as NULL, found by the second attack review).
func TestOutputCut(t *testing.T) {
	for _, c := range []struct {
		name  string
		write func(o *Output)
	}{
		{"copy", func(o *Output) { o.Copy(strings.Repeat("x\n", MaxOutput)) }},
		{"rows", func(o *Output) {
			o.Columns([]Column{NewColumn("a", 25)})
			for i := 0; i < MaxOutput/1000+10; i++ {
				o.Row([][]byte{[]byte(strings.Repeat("y", 999))})
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := NewOutput(defaults)
			c.write(o)
			got := o.Text()
			if got == nil || len(*got) < MaxOutput-1000 || len(*got) > MaxOutput+100 || !strings.HasSuffix(*got, "(output cut at 8388608 bytes)") {
				n := -1
				if got != nil {
					n = len(*got)
				}
				t.Fatalf("output of %d bytes, want about %d ending with the cut", n, MaxOutput)
			}
		})
	}
}
