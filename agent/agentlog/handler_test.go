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
