package agentlog

import (
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// textValue is an encoding.TextMarshaler.
type textValue struct{ s string }

func (v textValue) MarshalText() ([]byte, error) { return []byte("text:" + v.s), nil }

// logValue is a slog.LogValuer that resolves to a group.
type logValue struct{ id int }

func (v logValue) LogValue() slog.Value {
	return slog.GroupValue(slog.Int("id", v.id), slog.String("kind", "job"))
}

func TestMessageFormat(t *testing.T) {
	t.Parallel()
	tm := time.Date(2024, 5, 6, 7, 8, 9, 10000000, time.UTC)
	const head = "2024.05.06|07:08:09.010|"
	tests := []struct {
		name    string
		handler func(h slog.Handler) slog.Handler // nil: h itself
		msg     string
		args    []any
		want    string // the line without its newline
	}{
		{
			name: "no attributes",
			msg:  "connected",
			want: head + "running|connected",
		},
		{
			name: "kinds",
			msg:  "kinds",
			args: []any{
				"s", "word", "i", -3, "u", uint64(7), "f", 1.5, "b", true, "d", 1500 * time.Millisecond,
				"t", time.Date(2024, 1, 2, 3, 4, 5, 6000000, time.UTC), "err", errors.New("boom"),
				"tm", textValue{"x"}, "bytes", []byte("raw"), "slice", []int{1, 2},
			},
			want: head + "running|kinds s=word i=-3 u=7 f=1.5 b=true d=1.5s t=2024-01-02T03:04:05.006Z " +
				`err=boom tm=text:x bytes=raw slice="[1 2]"`,
		},
		{
			name: "quoted values",
			msg:  "quoted",
			args: []any{
				"blank", "a b", "bar", "a|b", "eq", "a=b", "quote", `say "hi"`, "nl", "l1\nl2", "tab", "a\tb",
				"empty", "", "nbsp", "a\u00a0b", "lsep", "a\u2028b", "bad", "a\xffb", "plain", `C:\dir`, "unicode", "grüße",
				"filler", "a\u3164b", "braille", "a\u2800b", "tag", "a\U000e0041b",
			},
			want: head + `running|quoted blank="a b" bar="a\x7cb" eq="a=b" quote="say \"hi\"" nl="l1\nl2" tab="a\tb" ` +
				`empty="" nbsp="a\u00a0b" lsep="a\u2028b" bad="a\xffb" plain=C:\dir unicode=grüße ` +
				`filler="a\u3164b" braille="a\u2800b" tag="a\U000e0041b"`,
		},
		{
			name: "quoted keys",
			msg:  "keys",
			args: []any{"a key", 1, "k|y", 2, "", 3},
			want: head + `running|keys "a key"=1 "k\x7cy"=2 ""=3`,
		},
		{
			name: "escaped message",
			msg:  "a|b\nc\r\td\\e\x00f\x7fg\u0085h\u2028i\xffj\u202ek\u200bl\U000e0001m\u3164n\u00a0o\u2800p\ufe0fq",
			want: head + `running|a\|b\nc\r\td\\e\x00f\x7fg\u0085h\u2028i\xffj\u202ek\u200bl\U000e0001m\u3164n\u00a0o\u2800p\ufe0fq`,
		},
		{
			name: "status with a bar and a newline",
			msg:  "odd",
			args: []any{"status", "a|b\nc d"},
			want: head + "a_b_c d|odd",
		},
		{
			name: "empty status counts as absent",
			msg:  "m",
			args: []any{"status", ""},
			want: head + "running|m",
		},
		{
			name: "groups",
			msg:  "groups",
			args: []any{
				slog.Group("db", "host", "localhost", slog.Group("conn", "port", 5432)),
				slog.Group("empty"),
				slog.Group("", "inline", 1),
				slog.Attr{},
				"job", logValue{9},
				slog.Group("g", "status", "not the status"),
			},
			want: head + "running|groups db.host=localhost db.conn.port=5432 inline=1 job.id=9 job.kind=job " +
				`g.status="not the status"`,
		},
		{
			name: "with attrs",
			handler: func(h slog.Handler) slog.Handler {
				return h.WithAttrs([]slog.Attr{slog.Int("agent", 12), slog.String("status", "sleeping")})
			},
			msg:  "tick",
			args: []any{"n", 1},
			want: head + "sleeping|tick agent=12 n=1",
		},
		{
			name: "record status overrides with attrs",
			handler: func(h slog.Handler) slog.Handler {
				return h.WithAttrs([]slog.Attr{slog.String("status", "sleeping")})
			},
			msg:  "fire",
			args: []any{"status", "firing"},
			want: head + "firing|fire",
		},
		{
			name: "with group",
			handler: func(h slog.Handler) slog.Handler {
				return h.WithAttrs([]slog.Attr{slog.Int("a", 1)}).WithGroup("run").WithAttrs([]slog.Attr{
					slog.Int("id", 5), slog.String("status", "sleeping"),
				}).WithGroup("").WithGroup("sql")
			},
			msg:  "done",
			args: []any{"rows", 3, slog.Group("x", "y", 1, "status", "in a group")},
			want: head + `sleeping|done a=1 run.id=5 run.sql.rows=3 run.sql.x.y=1 run.sql.x.status="in a group"`,
		},
		{
			name: "record status under with group",
			handler: func(h slog.Handler) slog.Handler {
				return h.WithGroup("run").WithAttrs([]slog.Attr{slog.String("status", "sleeping")}).WithGroup("sql")
			},
			msg:  "fire",
			args: []any{"rows", 3, "status", "firing"},
			want: head + "firing|fire run.sql.rows=3",
		},
		{
			name: "status in an inlined group",
			msg:  "inline",
			args: []any{slog.Group("", "status", "reconnecting", "try", 2)},
			want: head + "reconnecting|inline try=2",
		},
		{
			name: "with group without attributes",
			handler: func(h slog.Handler) slog.Handler {
				return h.WithGroup("run")
			},
			msg:  "nothing",
			want: head + "running|nothing",
		},
		{
			name: "with no attrs",
			handler: func(h slog.Handler) slog.Handler {
				return h.WithAttrs(nil)
			},
			msg:  "same",
			want: head + "running|same",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var h slog.Handler = newHandler(t, Options{Dir: dir, Agent: "1", Location: time.UTC})
			if tt.handler != nil {
				h = tt.handler(h)
			}
			handle(t, h, tm, LevelError, tt.msg, tt.args...)
			lines := readLines(t, filepath.Join(dir, "1", "2024.05.06.log"))
			if len(lines) != 1 {
				t.Fatalf("lines = %q, want one", lines)
			}
			checkFields(t, lines[0])
			if got := strings.TrimSuffix(lines[0], "\n"); got != tt.want {
				t.Fatalf("line\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestWithAttrsDoesNotChangeParent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHandler(t, Options{Dir: dir, Agent: "1", Location: time.UTC})
	tm := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	a := h.WithAttrs([]slog.Attr{slog.Int("a", 1)})
	// Two children of a must not share the backing array of a's attributes.
	b := a.WithAttrs([]slog.Attr{slog.Int("b", 2)})
	c := a.WithAttrs([]slog.Attr{slog.Int("c", 3)})
	for _, hh := range []slog.Handler{h, a, b, c} {
		handle(t, hh, tm, LevelError, "m")
	}
	want := []string{
		"2024.05.06|07:08:09.000|running|m\n",
		"2024.05.06|07:08:09.000|running|m a=1\n",
		"2024.05.06|07:08:09.000|running|m a=1 b=2\n",
		"2024.05.06|07:08:09.000|running|m a=1 c=3\n",
	}
	if got := readLines(t, filepath.Join(dir, "1", "2024.05.06.log")); !slices.Equal(got, want) {
		t.Fatalf("lines = %q, want %q", got, want)
	}
}
