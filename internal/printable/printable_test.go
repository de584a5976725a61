package printable

import "testing"

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
		if got := String(tt.in); got != tt.want {
			t.Errorf("%s: printable.String(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}
