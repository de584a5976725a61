package sqlschema

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// CallName returns the schema and the name of the function a stored call names: the call as
// pgj_call_resolve_ wrote it back, `schema.name(arguments)`, each part as quote_ident writes it
// (bare: a lowercase letter or underscore, then lowercase letters, digits and underscores; else in
// double quotes, a quote doubled). The run's guard checks who owns the functions of that name.
func CallName(call string) (schema, name string, err error) {
	schema, rest, err := ident(call, 0)
	if err == nil && !strings.HasPrefix(rest, ".") {
		err = fmt.Errorf("position %d: want '.' after the schema", len(call)-len(rest)+1)
	}
	if err == nil {
		name, rest, err = ident(call, len(call)-len(rest)+1)
	}
	if err == nil && !strings.HasPrefix(rest, "(") {
		err = fmt.Errorf("position %d: want '(' after the function's name", len(call)-len(rest)+1)
	}
	if err != nil {
		return "", "", fmt.Errorf("the stored call %q does not start with a schema-qualified function name: %w", truncate(call, 200), err)
	}
	return schema, name, nil
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
