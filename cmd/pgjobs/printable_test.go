package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPrintable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "OffLine", "OffLine"},
		{"call with a backslash", `public.f('b\c'::text)`, `public.f('b\c'::text)`},
		{"newline forging a row", "x\nEvil  public.evil()", `x\nEvil  public.evil()`},
		{"terminal escape", "x\x1b[2J", `x\x1b[2J`},
		{"tab breaking the columns", "a\tb", `a\tb`},
		{"line separator", "a\u2028b", `a\u2028b`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		{"replacement character itself", "a\uFFFDb", "a\uFFFDb"},
		{"multibyte", "tâche", "tâche"},
		{"bidi override reordering the row", "Bill\u202eevil", `Bill\u202eevil`},
		{"zero-width space hiding a difference", "Bill\u200bing", `Bill\u200bing`},
		{"bidi isolate", "a\u2066b\u2069", `a\u2066b\u2069`},
	} {
		if got := printable(tt.in); got != tt.want {
			t.Errorf("%s: printable(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestPrintJSONEscapesControlsAndFormats(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"C0 control", "a\x1b[31mb", `"a\u001b[31mb"`},
		{"C1 next line", "a\u0085b", `"a\u0085b"`},
		{"DEL", "a\x7fb", `"a\u007fb"`},
		{"bidi override", "Bill\u202eevil", `"Bill\u202eevil"`},
		{"line separator", "a\u2028b", `"a\u2028b"`},
		{"format character past U+FFFF", "a\U000E0001b", `"a\udb40\udc01b"`},
		{"multibyte stays", "tâche", `"tâche"`},
	} {
		var b strings.Builder
		if err := printJSON(&b, tt.in); err != nil {
			t.Fatal(err)
		}
		var back string
		if got := strings.TrimSuffix(b.String(), "\n"); got != tt.want {
			t.Errorf("%s: printJSON(%q) = %s, want %s", tt.name, tt.in, got, tt.want)
		} else if err := json.Unmarshal([]byte(got), &back); err != nil || back != tt.in {
			t.Errorf("%s: %s reads back as %q (%v), want %q", tt.name, got, back, err, tt.in)
		}
	}
}
