package config

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuote(t *testing.T) {
	t.Parallel()
	a := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "empty", in: "", want: `""`},
		{name: "short", in: "a b", want: `"a b"`},
		{name: "at_limit", in: a(200), want: `"` + a(200) + `"`},
		{name: "one_past_limit", in: a(201), want: `"` + a(200) + `"... (201 bytes)`},
		{name: "escapes_count_as_their_bytes", in: a(199) + "\t" + a(5), want: `"` + a(199) + `\t"... (205 bytes)`},
		{name: "two_byte_rune_across_the_cut", in: a(199) + "é" + a(5), want: `"` + a(199) + `"... (206 bytes)`},
		{name: "two_byte_rune_before_the_cut", in: a(198) + "é" + a(5), want: `"` + a(198) + `é"... (205 bytes)`},
		{name: "four_byte_rune_across_the_cut", in: a(197) + "😀" + a(5), want: `"` + a(197) + `"... (206 bytes)`},
		{name: "four_byte_rune_ending_at_the_cut", in: a(196) + "😀" + a(5), want: `"` + a(196) + `😀"... (205 bytes)`},
		{name: "three_byte_rune_one_byte_past", in: a(198) + "€" + a(5), want: `"` + a(198) + `"... (206 bytes)`},
		{name: "stray_continuation_bytes_are_cut_as_bytes", in: a(198) + "\x80\x80\x80\x80\x80", want: `"` + a(198) + `\x80\x80"... (203 bytes)`},
		{name: "truncated_sequence_is_cut_as_bytes", in: a(199) + "\xe2\x82" + a(5), want: `"` + a(199) + `\xe2"... (206 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := quote(tt.in); got != tt.want {
				t.Errorf("quote = %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestClip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{name: "short", in: "localhost:5432/sales", want: "localhost:5432/sales"},
		{name: "at_limit", in: strings.Repeat("h", 200), want: strings.Repeat("h", 200)},
		{name: "long", in: strings.Repeat("h", 300) + ":5432/x", want: strings.Repeat("h", 200) + "..."},
		{name: "utf8", in: "h" + strings.Repeat("é", 150), want: "h" + strings.Repeat("é", 99) + "..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := clip(tt.in)
			if got != tt.want {
				t.Errorf("clip = %q\nwant %q", got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("clip cut a character: %q", got)
			}
		})
	}
}
