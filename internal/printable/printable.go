// Package printable writes text that other database roles chose so that a terminal shows it as it is.
package printable

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// String returns s with control characters, format characters (bidi overrides, zero-width
// spaces), line separators, characters that print as nothing (Hidden) and invalid UTF-8 written
// as Go escapes (\n, \t, \x1b, \u202e, \u3164): names and calls are any role's text, and may not
// forge lines or rows, reorder or hide text, pass for another name, or drive the terminal.
func String(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case unicode.IsControl(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		case Hidden(r):
			b.Write(AppendEscape(nil, r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// AppendEscape appends r to buf as a Go escape of its code point: \u3164, or \U000e0100 past
// U+FFFF.
func AppendEscape(buf []byte, r rune) []byte {
	if r > 0xffff {
		return fmt.Appendf(buf, `\U%08x`, r)
	}
	return fmt.Appendf(buf, `\u%04x`, r)
}

// Hidden tells a character other than a control character that a terminal shows as nothing, as
// a blank, or not at all as it is, so that a name holding it may read as another: format characters
// (bidi overrides, zero-width spaces), line and paragraph separators, spaces other than U+0020
// (U+00A0, U+3000), the fillers and other characters Unicode says to ignore when they cannot be
// shown (U+3164, U+034F), variation selectors, the blank Braille pattern U+2800, the Khitan
// filler U+16FE4, private-use and unassigned code points.
func Hidden(r rune) bool {
	switch {
	case r == ' ':
		return false
	case r == '\u2800', r == '\U00016fe4': // the blank Braille pattern, the Khitan small script filler
		return true
	}
	return unicode.In(r, unicode.Cf, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Co, unicode.Cn,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// Exact returns String(s) with each backslash doubled, so that no two texts read alike (String
// leaves a backslash as it is: a role's name may spell out `\x1b` and read like an escaped
// ESC). It is for keys, such as metric label values, where two jobs must never share one.
func Exact(s string) string {
	return String(strings.ReplaceAll(s, `\`, `\\`))
}

// JSON returns the JSON text j with every control character and every Hidden character of its
// strings escaped (\u0085, \u202e, \u3164; past U+FFFF a surrogate pair): encoding/json leaves C1
// controls, bidi overrides and fillers raw, and a role's text must not act on the terminal of
// whoever reads the output. Outside strings, JSON has only ASCII punctuation and blanks.
func JSON(j []byte) []byte {
	out := make([]byte, 0, len(j))
	for _, r := range string(j) {
		switch {
		case r < 0x7f || !(unicode.IsControl(r) || Hidden(r)):
			out = utf8.AppendRune(out, r)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, "\\u%04x\\u%04x", hi, lo)
		default:
			out = fmt.Appendf(out, "\\u%04x", r)
		}
	}
	return out
}
