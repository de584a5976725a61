package agentlog

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/internal/syncbuf"
)

// testClock is an Options.Now that moves only when the test says.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// write passes a record of the clock's time to h.Handle and returns its error.
func write(h *Handler, clock *testClock, msg string) error {
	return h.Handle(context.Background(), slog.NewRecord(clock.Now(), LevelError, msg, 0))
}

// unusable returns ways to make the log of agent 7 under root fail, also for root: each returns
// Options.Dir and the error every write reports.
func unusable() []struct {
	name  string
	setup func(t *testing.T, root string) (dir, wantErr string)
} {
	return []struct {
		name  string
		setup func(t *testing.T, root string) (dir, wantErr string)
	}{
		{
			name: "parent_is_a_file",
			setup: func(t *testing.T, root string) (string, string) {
				file := filepath.Join(root, "file")
				touch(t, root, "file")
				name := filepath.Join(file, "log", "7", "2024.03.30.log")
				return filepath.Join(file, "log"), "write " + name + ": error getting log file info: stat " + name + ": not a directory"
			},
		},
		{
			name: "agent_folder_is_a_file",
			setup: func(t *testing.T, root string) (string, string) {
				touch(t, root, "7")
				name := filepath.Join(root, "7", "2024.03.30.log")
				return root, "write " + name + ": error getting log file info: stat " + name + ": not a directory"
			},
		},
		{
			name: "disk_full",
			setup: func(t *testing.T, root string) (string, string) {
				if _, err := os.Stat("/dev/full"); err != nil {
					t.Skip("no /dev/full")
				}
				touch(t, root, "7/")
				if err := os.Symlink("/dev/full", filepath.Join(root, "7", "2024.03.30.log")); err != nil {
					t.Fatal(err)
				}
				name := filepath.Join(root, "7", "2024.03.30.log")
				return root, "write " + name + ": write " + name + ": no space left on device"
			},
		},
	}
}

// TestReportUnusableLog: a log that cannot be written is reported at once, then at most once a minute
// with the number of failures left out, and at Close the failures no report showed.
func TestReportUnusableLog(t *testing.T) {
	t.Parallel()
	for _, tt := range unusable() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, wantErr := tt.setup(t, t.TempDir())
			clock := &testClock{now: time.Date(2024, 3, 30, 12, 0, 0, 0, time.UTC)}
			var reports syncbuf.Buffer
			h, err := New(Options{Dir: dir, Agent: "7", Location: time.UTC, Errors: &reports, Now: clock.Now})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			prefix := "agentlog: log of agent 7: cannot write, log lines are lost: " + wantErr
			steps := []struct {
				after  time.Duration // clock advance before the write
				writes int
				want   []string // the reports so far
			}{
				{writes: 1, want: []string{prefix + " (further failures are reported at most once per 1m0s)"}},
				{after: 30 * time.Second, writes: 3},
				{after: 29 * time.Second, writes: 1},
				{after: time.Second, writes: 1, want: []string{prefix + " (4 more failures since the last report)"}},
				{after: 59 * time.Second, writes: 1},
				{after: 2 * time.Minute, writes: 1, want: []string{prefix + " (1 more failure since the last report)"}},
				{after: time.Second, writes: 2},
			}
			var want []string
			for i, s := range steps {
				clock.advance(s.after)
				for range s.writes {
					if err := write(h, clock, "lost"); err == nil || err.Error() != "agentlog: "+wantErr {
						t.Fatalf("step %d: Handle error = %v, want agentlog: %s", i, err, wantErr)
					}
				}
				want = append(want, s.want...)
				if got := reports.Lines(); !slices.Equal(got, want) {
					t.Fatalf("step %d: reports\n%s\nwant\n%s", i, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
			}
			if err := h.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			want = append(want, "agentlog: log of agent 7: 2 more failures since the last report, the last: "+wantErr)
			if got := reports.Lines(); !slices.Equal(got, want) {
				t.Fatalf("after Close, reports\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

// TestReportOpen: Open finds a log that cannot be written at once, before any record, and reports it; on
// a usable folder it creates the day's file and reports nothing.
func TestReportOpen(t *testing.T) {
	t.Parallel()
	for _, tt := range unusable() {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, wantErr := tt.setup(t, t.TempDir())
			clock := &testClock{now: time.Date(2024, 3, 30, 12, 0, 0, 0, time.UTC)}
			var reports syncbuf.Buffer
			h := newHandler(t, Options{Dir: dir, Agent: "7", Location: time.UTC, Errors: &reports, Now: clock.Now})
			if err := h.Open(); err == nil || err.Error() != "agentlog: "+wantErr {
				t.Fatalf("Open error = %v, want agentlog: %s", err, wantErr)
			}
			want := []string{"agentlog: log of agent 7: cannot write, log lines are lost: " + wantErr +
				" (further failures are reported at most once per 1m0s)"}
			if got := reports.Lines(); !slices.Equal(got, want) {
				t.Fatalf("reports %q, want %q", got, want)
			}
		})
	}
	t.Run("usable", func(t *testing.T) {
		t.Parallel()
		root := t.TempDir()
		clock := &testClock{now: time.Date(2024, 3, 30, 23, 30, 0, 0, time.UTC)}
		var reports syncbuf.Buffer
		h := newHandler(t, Options{Dir: root, Agent: "7", Location: berlin(t), Errors: &reports, Now: clock.Now})
		if err := h.Open(); err != nil {
			t.Fatalf("Open: %v", err)
		}
		// 23:30 UTC is 00:30 on 31 March in Berlin.
		if got := fileNames(t, filepath.Join(root, "7")); !slices.Equal(got, []string{"2024.03.31.log"}) {
			t.Fatalf("files %q, want the empty day file of 31 March", got)
		}
		if got := reports.Lines(); got != nil {
			t.Fatalf("reports %q, want none", got)
		}
	})
}

// TestReportWrittenAgain: once the folder is usable again, the records go to the file, and after the
// interval one report says so with the failures it did not show.
func TestReportWrittenAgain(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	touch(t, root, "7")
	clock := &testClock{now: time.Date(2024, 3, 30, 12, 0, 0, 0, time.UTC)}
	var reports syncbuf.Buffer
	h := newHandler(t, Options{Dir: root, Agent: "7", Location: time.UTC, Errors: &reports, Now: clock.Now})
	for range 3 {
		if err := write(h, clock, "lost"); err == nil {
			t.Fatal("Handle into a file where the folder should be succeeded")
		}
	}
	if err := os.Remove(filepath.Join(root, "7")); err != nil {
		t.Fatal(err)
	}
	clock.advance(10 * time.Second)
	if err := write(h, clock, "kept 1"); err != nil {
		t.Fatalf("Handle after the fix: %v", err)
	}
	if got := reports.Lines(); len(got) != 1 {
		t.Fatalf("reports %q, want the first failure's only", got)
	}
	clock.advance(50 * time.Second)
	if err := write(h, clock, "kept 2"); err != nil {
		t.Fatalf("Handle after the fix: %v", err)
	}
	clock.advance(time.Minute)
	if err := write(h, clock, "kept 3"); err != nil {
		t.Fatalf("Handle after the fix: %v", err)
	}
	got := reports.Lines()
	name := filepath.Join(root, "7", "2024.03.30.log")
	wantLast := "agentlog: log of agent 7: written again (2 more failures since the last report, the last: write " +
		name + ": error getting log file info: stat " + name + ": not a directory)"
	if len(got) != 2 || got[1] != wantLast {
		t.Fatalf("reports\n%s\nwant the first failure's and\n%s", strings.Join(got, "\n"), wantLast)
	}
	want := []string{
		"2024.03.30|12:00:10.000|running|kept 1\n",
		"2024.03.30|12:01:00.000|running|kept 2\n",
		"2024.03.30|12:02:00.000|running|kept 3\n",
	}
	if lines := readLines(t, filepath.Join(root, "7", "2024.03.30.log")); !slices.Equal(lines, want) {
		t.Fatalf("lines %q, want %q", lines, want)
	}
}
