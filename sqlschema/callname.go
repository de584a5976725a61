package sqlschema

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// StoredCall is what the run's guard is told of a stored call: the schema and the name of the
// function it names, and whether PostgreSQL may read it as a cast to a type of that name.
type StoredCall struct {
	Schema, Name string
	// Castable: the call has one positional argument (VARIADIC included), the only form that
	// PostgreSQL reads as a cast to a type of the function's name when no function fits exactly.
	Castable bool
}

// ParseStoredCall reads a stored call as it was written back when set (pgj_call_bind_, before schema version 15 pgj_call_resolve_),
// `schema.name(arguments)`: each part of the name as quote_ident writes it (bare: a lowercase
// letter or underscore, then lowercase letters, digits and underscores; else in double quotes, a
// quote doubled), the arguments as pg_get_viewdef writes them. Arguments it cannot count are taken
// as castable: the guard then looks at more, never at less.
func ParseStoredCall(call string) (StoredCall, error) {
	var c StoredCall
	schema, rest, err := ident(call, 0)
	if err == nil && !strings.HasPrefix(rest, ".") {
		err = fmt.Errorf("position %d: want '.' after the schema", len(call)-len(rest)+1)
	}
	var name string
	if err == nil {
		name, rest, err = ident(call, len(call)-len(rest)+1)
	}
	if err == nil && !strings.HasPrefix(rest, "(") {
		err = fmt.Errorf("position %d: want '(' after the function's name", len(call)-len(rest)+1)
	}
	if err != nil {
		return c, fmt.Errorf("the stored call %q does not start with a schema-qualified function name: %w", truncate(call, 200), err)
	}
	c.Schema, c.Name = schema, name
	args, named, counted := countArguments(rest[1:])
	c.Castable = !counted || args == 1 && !named
	return c, nil
}

// countArguments counts the arguments of s, what follows a call's opening parenthesis, up to the
// parenthesis that closes it, and reports whether one is named (name => value); counted is false
// when s does not end that way.
func countArguments(s string) (args int, named, counted bool) {
	depth, commas, empty := 0, 0, true
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\'' || ch == '"': // a string or a quoted identifier, the quote doubled inside
			end := closingQuote(s, i+1, ch)
			if end < 0 {
				return 0, false, false
			}
			i = end
			empty = false
		case ch == '(' || ch == '[':
			depth++
			empty = false
		case ch == ')' || ch == ']':
			if depth == 0 {
				if ch != ')' {
					return 0, false, false
				}
				if empty {
					return 0, false, true
				}
				return commas + 1, named, true
			}
			depth--
		case ch == ',' && depth == 0:
			commas++
		case ch == '=' && depth == 0 && i+1 < len(s) && s[i+1] == '>':
			named = true
			i++
		case ch == '$':
			return 0, false, false // no dollar quote is written back: not counted
		case ch != ' ':
			empty = false
		}
	}
	return 0, false, false
}

// closingQuote returns the index of the quote q that closes the quoted text of s from `from`, a
// quote doubled standing for itself; -1 when none does.
func closingQuote(s string, from int, q byte) int {
	for i := from; i < len(s); i++ {
		if s[i] != q {
			continue
		}
		if i+1 < len(s) && s[i+1] == q {
			i++
			continue
		}
		return i
	}
	return -1
}

// ident reads the identifier at byte offset at of s, as quote_ident writes it, and returns it
// unquoted with the rest of s after it.
func ident(s string, at int) (id, rest string, err error) {
	rest = s[at:]
	if strings.HasPrefix(rest, `"`) {
		var b strings.Builder
		for i := 1; i < len(rest); i++ {
			if rest[i] != '"' {
				b.WriteByte(rest[i])
				continue
			}
			if i+1 < len(rest) && rest[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			if b.Len() == 0 {
				return "", "", fmt.Errorf("position %d: an empty quoted identifier", at+1)
			}
			return b.String(), rest[i+1:], nil
		}
		return "", "", fmt.Errorf("position %d: a quoted identifier without its closing quote", at+1)
	}
	n := 0
	for n < len(rest) && (rest[n] >= 'a' && rest[n] <= 'z' || rest[n] == '_' || n > 0 && rest[n] >= '0' && rest[n] <= '9') {
		n++
	}
	if n == 0 {
		return "", "", fmt.Errorf("position %d: want an identifier", at+1)
	}
	return rest[:n], rest[n:], nil
}

// truncate returns s cut to at most n bytes, on a rune boundary, marked with "..." when cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}
