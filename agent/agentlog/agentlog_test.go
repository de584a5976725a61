package agentlog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// berlin returns Europe/Berlin: CET (UTC+1) in winter, CEST (UTC+2) in summer.
func berlin(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatalf("load Europe/Berlin: %v", err)
	}
	return loc
}

// newHandler returns New(opts), closed at the end of the test.
func newHandler(t *testing.T, opts Options) *Handler {
	t.Helper()
	h, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return h
}

// handle passes a record of time tm, level, msg and args to h.Handle.
func handle(t *testing.T, h slog.Handler, tm time.Time, level slog.Level, msg string, args ...any) {
	t.Helper()
	r := slog.NewRecord(tm, level, msg, 0)
	r.Add(args...)
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatalf("Handle(%q): %v", msg, err)
	}
}

// readLines returns the lines of the file at path, each with its newline.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	return strings.SplitAfter(string(b), "\n")[:strings.Count(string(b), "\n")]
}

// fileNames returns the names of the entries of dir, sorted.
func fileNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("read dir: %v", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// checkFields fails unless line is one line ending in a newline that splits into date, time, status and message.
func checkFields(t *testing.T, line string) {
	t.Helper()
	if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "\n") {
		t.Fatalf("line %q is not exactly one line", line)
	}
	f := strings.SplitN(strings.TrimSuffix(line, "\n"), "|", 4)
	if len(f) != 4 {
		t.Fatalf("line %q has %d fields, want 4", line, len(f))
	}
	if _, err := time.Parse(dateTimeLayout, f[0]+"|"+f[1]); err != nil {
		t.Fatalf("line %q: date and time: %v", line, err)
	}
	if f[2] == "" {
		t.Fatalf("line %q has an empty status", line)
	}
}

func TestMinLevel(t *testing.T) {
	t.Parallel()
	if !(LevelDebug < LevelInfo && LevelInfo < LevelEssential && LevelEssential < LevelError) {
		t.Fatalf("levels out of order: debug %v, info %v, essential %v, error %v",
			LevelDebug, LevelInfo, LevelEssential, LevelError)
	}
	tests := []struct {
		name     string
		logLevel int
		want     slog.Level
	}{
		{name: "below range", logLevel: -1, want: LevelError},
		{name: "0 errors only", logLevel: 0, want: LevelError},
		{name: "1 essential", logLevel: 1, want: LevelEssential},
		{name: "2 more information", logLevel: 2, want: LevelInfo},
		{name: "3 reserved", logLevel: 3, want: LevelInfo},
		{name: "4 reserved", logLevel: 4, want: LevelInfo},
		{name: "5 everything", logLevel: 5, want: LevelDebug},
		{name: "above range", logLevel: 99, want: LevelDebug},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := MinLevel(tt.logLevel); got != tt.want {
				t.Fatalf("MinLevel(%d) = %v, want %v", tt.logLevel, got, tt.want)
			}
		})
	}
}

func TestPathsAndLines(t *testing.T) {
	t.Parallel()
	loc := berlin(t)
	// 12:05:09.123999 UTC is 14:05:09.123 in Berlin (CEST): the time is truncated to milliseconds.
	summer := time.Date(2003, 6, 23, 12, 5, 9, 123999999, time.UTC)
	tests := []struct {
		name     string
		agent    string
		loc      *time.Location
		time     time.Time
		msg      string
		args     []any
		wantPath string
		wantLine string
	}{
		{
			name:     "master",
			agent:    "master",
			loc:      loc,
			time:     summer,
			msg:      "agent started",
			args:     []any{"version", "1.0.0"},
			wantPath: "master/2003.06.23.log",
			wantLine: "2003.06.23|14:05:09.123|running|agent started version=1.0.0\n",
		},
		{
			name:     "database agent",
			agent:    "1234",
			loc:      loc,
			time:     summer,
			msg:      "job fired",
			args:     []any{"status", "firing", "job", 17},
			wantPath: "1234/2003.06.23.log",
			wantLine: "2003.06.23|14:05:09.123|firing|job fired job=17\n",
		},
		{
			name:     "status in the middle",
			agent:    "7",
			loc:      loc,
			time:     summer,
			msg:      "sleep",
			args:     []any{"for", 90 * time.Second, "status", "sleeping", "until", "14:06"},
			wantPath: "7/2003.06.23.log",
			wantLine: "2003.06.23|14:05:09.123|sleeping|sleep for=1m30s until=14:06\n",
		},
		{
			name:     "winter time and other zone",
			agent:    "master",
			loc:      time.FixedZone("UTC-10", -10*3600),
			time:     time.Date(2004, 1, 1, 9, 0, 0, 7000000, loc),
			msg:      "stopping",
			args:     []any{"status", "stopping"},
			wantPath: "master/2003.12.31.log",
			wantLine: "2003.12.31|22:00:00.007|stopping|stopping\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			h := newHandler(t, Options{Dir: dir, Agent: tt.agent, Level: LevelDebug, Location: tt.loc})
			handle(t, h, tt.time, LevelError, tt.msg, tt.args...)
			got := readLines(t, filepath.Join(dir, tt.wantPath))
			if want := []string{tt.wantLine}; !slices.Equal(got, want) {
				t.Fatalf("lines = %q, want %q", got, want)
			}
			if names := fileNames(t, dir); !slices.Equal(names, []string{tt.agent}) {
				t.Fatalf("log root holds %q, want only %q", names, tt.agent)
			}
		})
	}
}

func TestLogLevels(t *testing.T) {
	t.Parallel()
	all := []string{"error", "essential", "info", "debug"}
	tests := []struct {
		name     string
		logLevel int
		want     []string
	}{
		{name: "0", logLevel: 0, want: all[:1]},
		{name: "1", logLevel: 1, want: all[:2]},
		{name: "2", logLevel: 2, want: all[:3]},
		{name: "3", logLevel: 3, want: all[:3]},
		{name: "4", logLevel: 4, want: all[:3]},
		{name: "5", logLevel: 5, want: all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var also bytes.Buffer
			h := newHandler(t, Options{Dir: dir, Agent: "master", Level: MinLevel(tt.logLevel), Also: &also})
			logger := slog.New(h)
			ctx := context.Background()
			logger.Log(ctx, LevelError, "error")
			logger.Log(ctx, LevelEssential, "essential")
			logger.Log(ctx, LevelInfo, "info")
			logger.Log(ctx, LevelDebug, "debug")
			var got []string
			for _, line := range strings.SplitAfter(also.String(), "\n") {
				if line != "" {
					checkFields(t, line)
					got = append(got, strings.SplitN(strings.TrimSuffix(line, "\n"), "|", 4)[3])
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("log level %d wrote %q, want %q", tt.logLevel, got, tt.want)
			}
		})
	}
}

func TestNilLevelIsErrorsOnly(t *testing.T) {
	t.Parallel()
	h := newHandler(t, Options{Dir: t.TempDir(), Agent: "master"})
	ctx := context.Background()
	if h.Enabled(ctx, LevelEssential) || !h.Enabled(ctx, LevelError) {
		t.Fatalf("nil Level: Enabled(essential) = %v, Enabled(error) = %v, want false, true",
			h.Enabled(ctx, LevelEssential), h.Enabled(ctx, LevelError))
	}
}

func TestLevelVar(t *testing.T) {
	t.Parallel()
	var lv slog.LevelVar
	lv.Set(MinLevel(0))
	h := newHandler(t, Options{Dir: t.TempDir(), Agent: "master", Level: &lv})
	derived := h.WithGroup("g").WithAttrs([]slog.Attr{slog.Int("a", 1)})
	ctx := context.Background()
	for _, step := range []struct {
		logLevel int
		want     bool
	}{{0, false}, {5, true}, {1, false}} {
		lv.Set(MinLevel(step.logLevel))
		for _, hh := range []slog.Handler{h, derived} {
			if got := hh.Enabled(ctx, LevelDebug); got != step.want {
				t.Fatalf("after setting log level %d: Enabled(debug) = %v, want %v", step.logLevel, got, step.want)
			}
		}
	}
}

func TestMidnight(t *testing.T) {
	t.Parallel()
	loc := berlin(t)
	dir := t.TempDir()
	h := newHandler(t, Options{Dir: dir, Agent: "42", Level: LevelDebug, Location: loc})
	// Berlin is UTC+1 on 30 March 2024: 22:59:59.999 UTC is 23:59:59.999 local, 23:00 UTC is midnight.
	handle(t, h, time.Date(2024, 3, 30, 22, 59, 59, 999000000, time.UTC), LevelInfo, "before")
	handle(t, h, time.Date(2024, 3, 30, 23, 0, 0, 0, time.UTC), LevelInfo, "after")
	// A late record of the previous day still goes to that day's file.
	handle(t, h, time.Date(2024, 3, 30, 23, 59, 0, 0, loc), LevelInfo, "late")
	// The night of the switch to summer time: 23:30 UTC is 01:30 CET, 01:00 UTC is 03:00 CEST, same day.
	handle(t, h, time.Date(2024, 3, 31, 1, 0, 0, 0, time.UTC), LevelInfo, "summer")

	agentDir := filepath.Join(dir, "42")
	if got, want := fileNames(t, agentDir), []string{"2024.03.30.log", "2024.03.31.log"}; !slices.Equal(got, want) {
		t.Fatalf("files = %q, want %q", got, want)
	}
	for _, f := range []struct {
		name string
		want []string
	}{
		{"2024.03.30.log", []string{
			"2024.03.30|23:59:59.999|running|before\n",
			"2024.03.30|23:59:00.000|running|late\n",
		}},
		{"2024.03.31.log", []string{
			"2024.03.31|00:00:00.000|running|after\n",
			"2024.03.31|03:00:00.000|running|summer\n",
		}},
	} {
		if got := readLines(t, filepath.Join(agentDir, f.name)); !slices.Equal(got, f.want) {
			t.Fatalf("%s: lines = %q, want %q", f.name, got, f.want)
		}
	}
}

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
			},
			want: head + `running|quoted blank="a b" bar="a\x7cb" eq="a=b" quote="say \"hi\"" nl="l1\nl2" tab="a\tb" ` +
				`empty="" nbsp="a\u00a0b" lsep="a\u2028b" bad="a\xffb" plain=C:\dir unicode=grüße`,
		},
		{
			name: "quoted keys",
			msg:  "keys",
			args: []any{"a key", 1, "k|y", 2, "", 3},
			want: head + `running|keys "a key"=1 "k\x7cy"=2 ""=3`,
		},
		{
			name: "escaped message",
			msg:  "a|b\nc\r\td\\e\x00f\x7fg\u0085h\u2028i\xffj\u202ek\u200bl\U000e0001m",
			want: head + `running|a\|b\nc\r\td\\e\x00f\x7fg\u0085h\u2028i\xffj\u202ek\u200bl\U000e0001m`,
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

func TestAlso(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var also bytes.Buffer
	h := newHandler(t, Options{Dir: dir, Agent: "master", Level: LevelDebug, Location: time.UTC, Also: &also})
	tm := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	handle(t, h, tm, LevelError, "one", "k", "v")
	handle(t, h.WithGroup("g"), tm.Add(time.Second), LevelDebug, "two|2", "k", "v w", "status", "firing")
	handle(t, h, tm.Add(24*time.Hour), LevelInfo, "next day")

	want := "2024.05.06|07:08:09.000|running|one k=v\n" +
		"2024.05.06|07:08:10.000|firing|two\\|2 g.k=\"v w\"\n" +
		"2024.05.07|07:08:09.000|running|next day\n"
	if also.String() != want {
		t.Fatalf("Also got\n%s\nwant\n%s", also.String(), want)
	}
	var files string
	for _, name := range []string{"2024.05.06.log", "2024.05.07.log"} {
		b, err := os.ReadFile(filepath.Join(dir, "master", name))
		if err != nil {
			t.Fatalf("read log: %v", err)
		}
		files += string(b)
	}
	if files != want {
		t.Fatalf("files hold\n%s\nwant\n%s", files, want)
	}
}

// failWriter fails every Write.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("terminal gone") }

func TestAlsoError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var reports bytes.Buffer
	h := newHandler(t, Options{Dir: dir, Agent: "master", Location: time.UTC, Also: failWriter{}, Errors: &reports})
	tm := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	err := h.Handle(context.Background(), slog.NewRecord(tm, LevelError, "m", 0))
	if err == nil || !strings.Contains(err.Error(), "terminal gone") {
		t.Fatalf("Handle error = %v, want the Also writer's error", err)
	}
	if !strings.Contains(reports.String(), "terminal gone") {
		t.Fatalf("reports %q do not say the Also writer's error", reports.String())
	}
	want := []string{"2024.05.06|07:08:09.000|running|m\n"}
	if got := readLines(t, filepath.Join(dir, "master", "2024.05.06.log")); !slices.Equal(got, want) {
		t.Fatalf("lines = %q, want %q (the file is written although Also failed)", got, want)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	const goroutines, records = 20, 200
	dir := t.TempDir()
	var also bytes.Buffer
	h := newHandler(t, Options{Dir: dir, Agent: "3", Location: time.UTC, Also: &also})
	tm := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	long := strings.Repeat("x|\n", 300)
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			var hh slog.Handler = h
			if g%2 == 1 {
				hh = h.WithGroup("g").WithAttrs([]slog.Attr{slog.Int("n", g)})
			}
			for i := range records {
				r := slog.NewRecord(tm, LevelError, fmt.Sprintf("g%d i%d %s", g, i, long), 0)
				r.Add("status", "firing")
				if err := hh.Handle(context.Background(), r); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Fatalf("Handle: %v", err)
		}
	}
	lines := readLines(t, filepath.Join(dir, "3", "2024.05.06.log"))
	if len(lines) != goroutines*records {
		t.Fatalf("%d lines, want %d", len(lines), goroutines*records)
	}
	escaped := strings.Repeat(`x\|\n`, 300)
	seen := make(map[string]bool)
	for _, line := range lines {
		checkFields(t, line)
		var g, i int
		if _, err := fmt.Sscanf(line, "2024.05.06|07:08:09.000|firing|g%d i%d ", &g, &i); err != nil {
			t.Fatalf("line %.80q: %v", line, err)
		}
		want := fmt.Sprintf("2024.05.06|07:08:09.000|firing|g%d i%d %s\n", g, i, escaped)
		if g%2 == 1 {
			want = fmt.Sprintf("2024.05.06|07:08:09.000|firing|g%d i%d %s g.n=%d\n", g, i, escaped, g)
		}
		if line != want {
			t.Fatalf("line %.80q... is not whole", line)
		}
		key := fmt.Sprint(g, " ", i)
		if seen[key] {
			t.Fatalf("record %s written twice", key)
		}
		seen[key] = true
	}
	b, err := os.ReadFile(filepath.Join(dir, "3", "2024.05.06.log"))
	if err != nil {
		t.Fatalf("read log: %v", err)
	}
	if !bytes.Equal(b, also.Bytes()) {
		t.Fatalf("Also got other lines than the file")
	}
}

func TestReopen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h := newHandler(t, Options{Dir: dir, Agent: "master", Location: time.UTC})
	tm := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	path := filepath.Join(dir, "master", "2024.05.06.log")
	moved := filepath.Join(dir, "master", "2024.05.06.log.1")

	if err := h.Reopen(); err != nil {
		t.Fatalf("Reopen before any record: %v", err)
	}
	handle(t, h, tm, LevelError, "first")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	// Until Reopen the open file, now moved, receives the lines.
	handle(t, h, tm, LevelError, "second")
	if err := h.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	handle(t, h, tm, LevelError, "third")

	for _, f := range []struct {
		path string
		want []string
	}{
		{moved, []string{"2024.05.06|07:08:09.000|running|first\n", "2024.05.06|07:08:09.000|running|second\n"}},
		{path, []string{"2024.05.06|07:08:09.000|running|third\n"}},
	} {
		if got := readLines(t, f.path); !slices.Equal(got, f.want) {
			t.Fatalf("%s: lines = %q, want %q", filepath.Base(f.path), got, f.want)
		}
	}
}

func TestClose(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	h, err := New(Options{Dir: dir, Agent: "master", Location: time.UTC})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	derived := h.WithGroup("g")
	tm := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	handle(t, h, tm, LevelError, "before")
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := h.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	for _, hh := range []slog.Handler{h, derived} {
		if err := hh.Handle(context.Background(), slog.NewRecord(tm, LevelError, "after", 0)); !errors.Is(err, ErrClosed) {
			t.Fatalf("Handle after Close = %v, want ErrClosed", err)
		}
	}
	if err := h.Reopen(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reopen after Close = %v, want ErrClosed", err)
	}
	want := []string{"2024.05.06|07:08:09.000|running|before\n"}
	if got := readLines(t, filepath.Join(dir, "master", "2024.05.06.log")); !slices.Equal(got, want) {
		t.Fatalf("lines = %q, want %q", got, want)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	tests := []struct {
		name    string
		opts    Options
		wantErr string // "" for success
	}{
		// A Dir that cannot be used is no error of New: see TestReportUnusableLog.
		{name: "master", opts: Options{Dir: filepath.Join(root, "a", "b"), Agent: "master"}},
		{name: "database agent", opts: Options{Dir: root, Agent: "1234"}},
		{name: "no dir", opts: Options{Agent: "master"}, wantErr: "agentlog: no log directory"},
		{name: "no agent", opts: Options{Dir: root}, wantErr: `agentlog: agent "" is neither "master" nor a number`},
		{name: "agent path", opts: Options{Dir: root, Agent: "../etc"}, wantErr: `agentlog: agent "../etc" is neither "master" nor a number`},
		{name: "agent name", opts: Options{Dir: root, Agent: "db1"}, wantErr: `agentlog: agent "db1" is neither "master" nor a number`},
		{name: "negative size", opts: Options{Dir: root, Agent: "1", MaxSizeMB: -1}, wantErr: "agentlog: MaxSizeMB -1 is negative"},
		{name: "negative age", opts: Options{Dir: root, Agent: "1", MaxAge: -2}, wantErr: "agentlog: MaxAge -2 is negative"},
		{name: "negative backups", opts: Options{Dir: root, Agent: "1", MaxBackups: -3}, wantErr: "agentlog: MaxBackups -3 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := New(tt.opts)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("New error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer h.Close()
			// New does no I/O: the folder comes with the first record.
			if _, err := os.Lstat(filepath.Join(tt.opts.Dir, tt.opts.Agent)); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("New created the agent folder or found one: %v", err)
			}
		})
	}
}
