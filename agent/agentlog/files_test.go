package agentlog

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestLayoutDay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		file    string
		wantDay string // "" if the name does not follow the layout
	}{
		{name: "day file", file: "2003.06.23.log", wantDay: "2003.06.23"},
		{name: "rotated piece", file: "2003.06.23-2003-06-23T10-11-12.345.log", wantDay: "2003.06.23"},
		{name: "compressed piece", file: "2003.06.23-2003-06-24T00-00-00.000.log.gz", wantDay: "2003.06.23"},
		{name: "leap day", file: "2004.02.29.log", wantDay: "2004.02.29"},
		{name: "invalid date", file: "2003.02.29.log"},
		{name: "short month", file: "2003.6.23.log"},
		{name: "prefix", file: "x2003.06.23.log"},
		{name: "other extension", file: "2003.06.23.txt"},
		{name: "logrotate suffix", file: "2003.06.23.log.1"},
		{name: "compressed day file", file: "2003.06.23.log.gz"},
		{name: "bad timestamp", file: "2003.06.23-garbage.log"},
		{name: "timestamp without milliseconds", file: "2003.06.23-2003-06-23T10-11-12.log"},
		{name: "piece with other extension", file: "2003.06.23-2003-06-23T10-11-12.345.txt"},
		{name: "too short", file: "2003.log"},
		{name: "empty", file: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			day, ok := layoutDay(tt.file)
			if day != tt.wantDay || ok != (tt.wantDay != "") {
				t.Fatalf("layoutDay(%q) = %q, %v, want %q", tt.file, day, ok, tt.wantDay)
			}
		})
	}
}

// touch creates the files named in dir, and the folders named with a trailing slash.
func touch(t *testing.T, dir string, names ...string) {
	t.Helper()
	for _, name := range names {
		var err error
		if d, ok := strings.CutSuffix(name, "/"); ok {
			err = os.MkdirAll(filepath.Join(dir, d), 0o755)
		} else {
			err = os.WriteFile(filepath.Join(dir, name), []byte("old\n"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	loc := berlin(t)
	// Files that never match the layout, present in every case.
	foreign := []string{
		"2024.01.01.log.1", "2024.01.01.log.gz", "2024.01.01.txt", "2024.1.1.log", "x2024.01.01.log",
		"2024.01.01-garbage.log", "2024.02.30.log", "notes.txt",
	}
	old := []string{
		"2023.12.31.log", "2024.03.26.log", "2024.03.26-2024-03-26T10-00-00.000.log",
		"2024.03.20-2024-03-20T10-00-00.000.log.gz",
	}
	recent := []string{
		"2024.03.27.log", "2024.03.27-2024-03-27T10-00-00.000.log.gz", "2024.03.29.log",
		"2024.03.29-2024-03-29T23-00-00.000.log",
	}
	tests := []struct {
		name   string
		maxAge int
		want   []string // besides foreign files, the folder and the day file written
	}{
		{name: "keep all", maxAge: 0, want: slices.Concat(old, recent)},
		{name: "three days", maxAge: 3, want: recent},
		{name: "one day", maxAge: 1, want: recent[2:]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := filepath.Join(root, "5")
			touch(t, dir, "2024.01.01.log/")
			touch(t, dir, foreign...)
			touch(t, dir, old...)
			touch(t, dir, recent...)
			touch(t, root, "6/", "6/2000.01.01.log", "master/", "master/2000.01.01.log")

			h := newHandler(t, Options{Dir: root, Agent: "5", Location: loc, MaxAge: tt.maxAge})
			if got := fileNames(t, dir); len(got) != 1+len(foreign)+len(old)+len(recent) {
				t.Fatalf("New removed files: %q", got)
			}
			// The first record opens the file of 30 March and removes what is too old for that date.
			handle(t, h, time.Date(2024, 3, 30, 0, 30, 0, 0, loc), LevelError, "open")
			want := slices.Concat([]string{"2024.01.01.log", "2024.03.30.log"}, foreign, tt.want)
			slices.Sort(want)
			if got := fileNames(t, dir); !slices.Equal(got, want) {
				t.Fatalf("after opening, files = %q\nwant %q", got, want)
			}
			for _, other := range []string{"6", "master"} {
				if got := fileNames(t, filepath.Join(root, other)); !slices.Equal(got, []string{"2000.01.01.log"}) {
					t.Fatalf("folder %s holds %q, want its file kept", other, got)
				}
			}
		})
	}
}

func TestRetentionOnDaySwitch(t *testing.T) {
	t.Parallel()
	loc := berlin(t)
	root := t.TempDir()
	dir := filepath.Join(root, "master")
	h := newHandler(t, Options{Dir: root, Agent: "master", Location: loc, MaxAge: 2})
	handle(t, h, time.Date(2024, 3, 30, 12, 0, 0, 0, loc), LevelError, "day 1")
	touch(t, dir, "2024.03.27.log", "2024.03.28.log", "2024.03.28-2024-03-28T10-00-00.000.log.gz",
		"2024.03.29.log", "2024.03.27.log.1")
	// The same day and a late record of an earlier day do not remove files.
	handle(t, h, time.Date(2024, 3, 30, 13, 0, 0, 0, loc), LevelError, "day 1 again")
	handle(t, h, time.Date(2024, 3, 29, 23, 59, 0, 0, loc), LevelError, "late")
	want := []string{
		"2024.03.27.log", "2024.03.27.log.1", "2024.03.28-2024-03-28T10-00-00.000.log.gz", "2024.03.28.log",
		"2024.03.29.log", "2024.03.30.log",
	}
	if got := fileNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("before the switch, files = %q\nwant %q", got, want)
	}
	// Switching to 1 April keeps 30 and 31 March and 1 April.
	handle(t, h, time.Date(2024, 4, 1, 0, 0, 0, 0, loc), LevelError, "day 3")
	want = []string{"2024.03.27.log.1", "2024.03.30.log", "2024.04.01.log"}
	if got := fileNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("after the switch, files = %q\nwant %q", got, want)
	}
	wantLines := []string{
		"2024.03.30|12:00:00.000|running|day 1\n",
		"2024.03.30|13:00:00.000|running|day 1 again\n",
	}
	if got := readLines(t, filepath.Join(dir, "2024.03.30.log")); !slices.Equal(got, wantLines) {
		t.Fatalf("lines = %q, want %q", got, wantLines)
	}
}

func TestRotation(t *testing.T) {
	t.Parallel()
	const perMiB = 1024 // 1024-byte lines per MiB
	tests := []struct {
		name       string
		compress   bool
		maxBackups int
		records    int
		wantFirst  int // the number of the first record in the backup
	}{
		{name: "rotate", records: perMiB + 1},
		{name: "compress", compress: true, records: perMiB + 1},
		{name: "max backups", maxBackups: 1, records: 3*perMiB + 1, wantFirst: 2 * perMiB},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := filepath.Join(root, "9")
			h := newHandler(t, Options{
				Dir: root, Agent: "9", Location: time.UTC, MaxSizeMB: 1, MaxBackups: tt.maxBackups, Compress: tt.compress,
			})
			tm := time.Date(2024, 3, 30, 12, 0, 0, 0, time.UTC)
			pad := strings.Repeat("x", 1024-len("2024.03.30|12:00:00.000|running|")-len("00000")-1)
			for i := range tt.records {
				handle(t, h, tm, LevelError, fmt.Sprintf("%05d%s", i, pad))
			}
			// lumberjack compresses and removes pieces in a goroutine of its own: wait for the final state.
			wantSuffix := ".log"
			if tt.compress {
				wantSuffix = ".log.gz"
			}
			var backups []string
			deadline := time.Now().Add(20 * time.Second)
			for {
				backups = backups[:0]
				done := true
				for _, name := range fileNames(t, dir) {
					if name == "2024.03.30.log" {
						continue
					}
					if !strings.HasSuffix(name, wantSuffix) {
						done = false
					}
					backups = append(backups, name)
				}
				if done && len(backups) == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("backups = %q, want one *%s", backups, wantSuffix)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if day, ok := layoutDay(backups[0]); !ok || day != "2024.03.30" {
				t.Fatalf("backup %q does not follow the layout of 2024.03.30", backups[0])
			}

			want := []string{fmt.Sprintf("2024.03.30|12:00:00.000|running|%05d%s\n", tt.records-1, pad)}
			if got := readLines(t, filepath.Join(dir, "2024.03.30.log")); !slices.Equal(got, want) {
				t.Fatalf("day file after rotation holds %d lines, want the last record only", len(got))
			}
			f, err := os.Open(filepath.Join(dir, backups[0]))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var r io.Reader = f
			if tt.compress {
				zr, err := gzip.NewReader(f)
				if err != nil {
					t.Fatalf("gzip: %v", err)
				}
				r = zr
			}
			b, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("read backup: %v", err)
			}
			var wantBackup strings.Builder
			for i := tt.wantFirst; i < tt.wantFirst+perMiB; i++ {
				fmt.Fprintf(&wantBackup, "2024.03.30|12:00:00.000|running|%05d%s\n", i, pad)
			}
			if string(b) != wantBackup.String() {
				t.Fatalf("backup holds %d bytes, want records %d to %d (%d bytes)",
					len(b), tt.wantFirst, tt.wantFirst+perMiB-1, wantBackup.Len())
			}
		})
	}
}
