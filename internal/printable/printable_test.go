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
		{"Hangul filler, printable and blank", "Backup\u3164", `Backup\u3164`},
		{"Hangul choseong filler", "a\u115fb", `a\u115fb`},
		{"no-break space", "Back\u00a0up", `Back\u00a0up`},
		{"ideographic space", "a\u3000b", `a\u3000b`},
		{"blank Braille pattern", "a\u2800b", `a\u2800b`},
		{"Khitan small script filler", "Backup\U00016fe4", `Backup\U00016fe4`},
		{"combining grapheme joiner", "a\u034fb", `a\u034fb`},
		{"variation selectors", "a\ufe0fb\U000e0100", `a\ufe0fb\U000e0100`},
		{"private use", "a\ue000b\U000f0000", `a\ue000b\U000f0000`},
		{"unassigned", "a\u0378b", `a\u0378b`},
		{"tag character", "a\U000e0041", `a\U000e0041`},
		{"combining accent, emoji and CJK", "e\u0301 \U0001f600 東京", "e\u0301 \U0001f600 東京"},
	} {
		if got := String(tt.in); got != tt.want {
			t.Errorf("%s: printable.String(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}

func TestExact(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"plain", "OffLine", "OffLine"},
		{"multibyte", "tâche", "tâche"},
		{"terminal escape", "x\x1b[2J", `x\x1b[2J`},
		{"a backslash spelling out an escape", `x\x1b[2J`, `x\\x1b[2J`},
		{"invalid UTF-8", "a\xffb", `a\xffb`},
		{"invalid UTF-8 spelled out", `a\xffb`, `a\\xffb`},
		{"bidi override", "Bill\u202eevil", `Bill\u202eevil`},
	} {
		if got := Exact(tt.in); got != tt.want {
			t.Errorf("%s: printable.Exact(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
	// no two of these read alike, though String reads the pairs alike
	seen := map[string]string{}
	for _, in := range []string{"W\x1b", `W\x1b`, "a\xff", `a\xff`, "a\xfe", "b\u202e", `b\u202e`, `c\`, `c\\`} {
		if other, ok := seen[Exact(in)]; ok {
			t.Errorf("Exact(%q) = Exact(%q) = %q", in, other, Exact(in))
		}
		seen[Exact(in)] = in
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name, in, want string }{
		{"ASCII as it is", `{"a": "b\u001b", "n": 1}`, `{"a": "b\u001b", "n": 1}`},
		{"C1 control", "{\"a\": \"x\u0085y\"}", `{"a": "x\u0085y"}`},
		{"bidi override and filler", "[\"Bill\u202eing\u3164\"]", `["Bill\u202eing\u3164"]`},
		{"past U+FFFF: a surrogate pair", "[\"a\U000e0100\"]", `["a\udb40\udd00"]`},
		{"multibyte kept", "[\"tâche 東京\"]", "[\"tâche 東京\"]"},
	} {
		if got := string(JSON([]byte(tt.in))); got != tt.want {
			t.Errorf("%s: printable.JSON(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
}
