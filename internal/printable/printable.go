// Package printable writes text that other database roles chose so that a terminal shows it as it is.
package printable

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s with control characters, format characters (bidi overrides, zero-width
// spaces), line separators and invalid UTF-8 written as Go escapes (\n, \t, \x1b, \u202e): names
// and calls are any role's text, and may not forge lines or rows, reorder or hide text, or
// drive the terminal.
func String(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029':
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Exact returns String(s) with each backslash doubled, so that no two texts read alike (String
// leaves a backslash as it is: a role's name may spell out `\x1b` and read like an escaped
// ESC). It is for keys, such as metric label values, where two jobs must never share one.
func Exact(s string) string {
	return String(strings.ReplaceAll(s, `\`, `\\`))
}
