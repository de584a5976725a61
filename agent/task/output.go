package task

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// Column is a column of a result set: its name and whether its type is one whose values are not
// quoted when the task's string setting is on (bool, the integers, float, numeric, oid).
type Column struct {
	Name string
	Bare bool
}

// bareTypes are the type OIDs of bool, int8, int2, int4, oid, float4, float8 and numeric.
var bareTypes = map[uint32]bool{16: true, 20: true, 21: true, 23: true, 26: true, 700: true, 701: true, 1700: true}

// NewColumn returns the column named name of the type with OID typeOID.
func NewColumn(name string, typeOID uint32) Column {
	return Column{Name: name, Bare: bareTypes[typeOID]}
}

// Output is a task's output as it is produced, statement by statement (docs/tasks.md, "Output"):
// lines joined with \n, no trailing newline; nothing produced reads as NULL.
type Output struct {
	f       sqlschema.TaskFormat
	text    strings.Builder
	lines   int
	columns []Column
	header  bool // the header of the current result set is written
	cut     bool // MaxOutput was reached: what came after is dropped
}

// MaxOutput is the most bytes of output a task keeps: a task can print as much as it likes, the
// agent's memory and the row cannot hold it.
const MaxOutput = 8 << 20

// NewOutput returns an empty output written in format f.
func NewOutput(f sqlschema.TaskFormat) *Output { return &Output{f: f} }

func (o *Output) line(s string) {
	if o.cut {
		return
	}
	if room := MaxOutput - o.text.Len() - 1; len(s) > room {
		// What fits is kept, cut on a character boundary: a long COPY keeps its first 8 MiB.
		cut := max(room, 0)
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, o.cut = s[:cut], true
	}
	if o.lines > 0 {
		o.text.WriteByte('\n')
	}
	o.text.WriteString(s)
	o.lines++
}

// Columns starts a result set: its rows follow. A result set adds a header line (with more than one
// column and header on) only when it has rows.
func (o *Output) Columns(columns []Column) {
	o.columns, o.header = append(o.columns[:0], columns...), false
}

// Row adds a row of the current result set; a nil value is NULL. Values are text as the server
// sends them.
func (o *Output) Row(values [][]byte) {
	var b strings.Builder
	if !o.header {
		o.header = true
		if o.f.Header && len(o.columns) > 1 {
			for i, c := range o.columns {
				if i > 0 {
					b.WriteString(o.f.Delimiter)
				}
				b.WriteString(o.quoted(c.Name))
			}
			o.line(b.String())
			b.Reset()
		}
	}
	for i, v := range values {
		if i > 0 {
			b.WriteString(o.f.Delimiter)
		}
		switch {
		case v == nil:
			b.WriteString(o.f.Null)
		case o.f.String && i < len(o.columns) && o.columns[i].Bare:
			b.Write(v)
		default:
			b.WriteString(o.quoted(string(v)))
		}
	}
	o.line(b.String())
}

// Done ends a statement with its command tag: a statement without a result set adds its tag, but
// never a SELECT n tag.
func (o *Output) Done(tag string, hadResultSet bool) {
	if !hadResultSet && tag != "" && !strings.HasPrefix(tag, "SELECT") {
		o.line(tag)
	}
	o.columns, o.header = o.columns[:0], false
}

// Copy adds what a COPY ... TO STDOUT sent, as it is, but for the newline that ends it.
func (o *Output) Copy(data string) {
	o.line(strings.TrimSuffix(data, "\n"))
}

// quoted returns s between the quote characters, with the quote and escape characters in it
// escaped, when the format has a quote character; else s.
func (o *Output) quoted(s string) string {
	if o.f.Quote == "" {
		return s
	}
	if o.f.Escape != "" {
		var b strings.Builder
		for _, r := range s {
			if c := string(r); c == o.f.Quote || c == o.f.Escape {
				b.WriteString(o.f.Escape)
			}
			b.WriteRune(r)
		}
		s = b.String()
	}
	return o.f.Quote + s + o.f.Quote
}

// Text returns the output, nil when nothing was produced, as text the database takes: a byte that
// is not UTF-8 (binary COPY, a session in another client_encoding) reads as U+FFFD, and NUL as
// "\0".
func (o *Output) Text() *string {
	if o.lines == 0 {
		return nil
	}
	s := storable(o.text.String())
	if o.cut {
		s += fmt.Sprintf("\n... (output cut at %d bytes)", MaxOutput)
	}
	return &s
}

// storable returns s as a text column can store it in a UTF-8 database: valid UTF-8, no NUL.
func storable(s string) string {
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", `\0`)
}
