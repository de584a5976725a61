package agentlog

import (
	"bytes"
	"context"
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
