package agentlog

import (
	"encoding"
	"fmt"
	"log/slog"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/pgjobs/pgjobs/internal/printable"
)

// dateTimeLayout is the date and time fields of a line: YYYY.MM.DD|HH:MM:SS.mmm.
const dateTimeLayout = "2006.01.02|15:04:05.000"

// timeValueLayout formats attribute values of kind time: RFC 3339 with milliseconds, in the value's own zone.
const timeValueLayout = "2006-01-02T15:04:05.000Z07:00"

// appendAttr appends a as " key=value" (the attributes of a group each so, with dotted keys) to buf, following
// the slog.Handler rules: values are resolved, an empty attribute and a group without attributes are dropped,
// and the attributes of a group with an empty key are inlined. If top (a is given to Handle or WithAttrs, not
// inside a group with a key), a StatusKey attribute is not written and its value, unless empty, goes to *status.
func appendAttr(buf []byte, prefix string, top bool, a slog.Attr, status *string) []byte {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return buf
	}
	if a.Value.Kind() == slog.KindGroup {
		attrs := a.Value.Group()
		if len(attrs) == 0 {
			return buf
		}
		p := prefix
		if a.Key != "" {
			p = prefix + a.Key + "."
			top = false
		}
		for _, ga := range attrs {
			buf = appendAttr(buf, p, top, ga, status)
		}
		return buf
	}
	if top && a.Key == StatusKey {
		if s := a.Value.String(); s != "" {
			*status = s
		}
		return buf
	}
	buf = append(buf, ' ')
	buf = appendQuoted(buf, prefix+a.Key)
	buf = append(buf, '=')
	return appendQuoted(buf, valueString(a.Value))
}

// valueString returns the text of a resolved, non-group value.
func valueString(v slog.Value) string {
	switch v.Kind() {
	case slog.KindTime:
		return v.Time().Format(timeValueLayout)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return fmt.Sprint(x)
		case encoding.TextMarshaler:
			b, err := x.MarshalText()
			if err != nil {
				return "!ERROR:" + err.Error()
			}
			return string(b)
		case []byte:
			return string(x)
		default:
			return fmt.Sprintf("%+v", x)
		}
	default:
		return v.String()
	}
}

// needsQuote reports whether a key or value s must be quoted: it is empty or holds a blank, '|', '=', '"', a
// control or other non-printing character or invalid UTF-8.
func needsQuote(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return true
		}
		if r == ' ' || r == '|' || r == '=' || r == '"' || !unicode.IsPrint(r) || printable.Hidden(r) {
			return true
		}
		i += size
	}
	return false
}

// appendQuoted appends s to buf, quoted with strconv.Quote, every '|' written as `\x7c` and every
// character that prints as nothing that Quote leaves (printable.Hidden: U+3164) escaped, if
// needsQuote(s).
func appendQuoted(buf []byte, s string) []byte {
	if !needsQuote(s) {
		return append(buf, s...)
	}
	for _, r := range strconv.Quote(s) {
		switch {
		case r == '|':
			buf = append(buf, `\x7c`...)
		case printable.Hidden(r):
			buf = printable.AppendEscape(buf, r)
		default:
			buf = utf8.AppendRune(buf, r)
		}
	}
	return buf
}

// appendEscaped appends the message s to buf with '\', '|', control characters, characters that
// print as nothing (printable.Hidden: format characters, spaces but ' ', fillers) and invalid UTF-8 escaped (see
// Handler), so that it stays on one line, holds no bare '|' and shows what it says.
func appendEscaped(buf []byte, s string) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\\':
			buf = append(buf, `\\`...)
		case r == '|':
			buf = append(buf, `\|`...)
		case r == '\n':
			buf = append(buf, `\n`...)
		case r == '\r':
			buf = append(buf, `\r`...)
		case r == '\t':
			buf = append(buf, `\t`...)
		case r == utf8.RuneError && size == 1:
			buf = fmt.Appendf(buf, `\x%02x`, s[i])
		case r < utf8.RuneSelf && unicode.IsControl(r):
			buf = fmt.Appendf(buf, `\x%02x`, r)
		case unicode.IsControl(r) || printable.Hidden(r):
			buf = printable.AppendEscape(buf, r)
		default:
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return buf
}

// appendStatus appends the status s to buf with '|' and non-printing characters other than ' ' replaced by '_'.
func appendStatus(buf []byte, s string) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '|' || (r == utf8.RuneError && size == 1) || (r != ' ' && !unicode.IsPrint(r)) {
			buf = append(buf, '_')
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		i += size
	}
	return buf
}
