package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnusableLogDirIsReported: a log that cannot be written (also for root) is reported on standard error
// as soon as the agent starts, once, and the agent runs on; at its stop it reports the failures it left
// out.
func TestUnusableLogDirIsReported(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		agent string // the agent whose log fails
		// setup returns the --log-dir to use and the configuration file.
		setup func(t *testing.T) (logDir, conf string)
	}{
		{
			name: "parent_is_a_file", agent: "master",
			setup: func(t *testing.T) (string, string) {
				file := filepath.Join(t.TempDir(), "file")
				writeFile(t, file, "")
				return filepath.Join(file, "log"), emptyConfig(t)
			},
		},
		{
			name: "disk_full", agent: "master",
			setup: func(t *testing.T) (string, string) {
				if _, err := os.Stat("/dev/full"); err != nil {
					t.Skip("no /dev/full")
				}
				logDir := t.TempDir()
				if err := os.Mkdir(filepath.Join(logDir, "master"), 0o755); err != nil {
					t.Fatal(err)
				}
				// Today's file, and tomorrow's should the test run at midnight.
				for _, day := range []time.Time{time.Now(), time.Now().Add(time.Hour)} {
					link := filepath.Join(logDir, "master", day.Format("2006.01.02")+".log")
					if _, err := os.Lstat(link); err != nil {
						symlink(t, "/dev/full", link)
					}
				}
				return logDir, emptyConfig(t)
			},
		},
		{
			name: "database_folder_is_a_file", agent: "7",
			setup: func(t *testing.T) (string, string) {
				_, conf := enabled(t, 1) // database agent 7
				logDir := t.TempDir()
				writeFile(t, filepath.Join(logDir, "7"), "")
				return logDir, conf
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			logDir, conf := tt.setup(t)
			started := time.Now()
			p := startAgent(t, conf, "--log-dir", logDir)
			first := "pgjobsagent: agentlog: log of agent " + tt.agent + ": cannot write, log lines are lost: "
			reports := func() []string {
				var lines []string
				for _, l := range strings.Split(p.stderr.String(), "\n") {
					if strings.HasPrefix(l, "pgjobsagent: agentlog: log of agent "+tt.agent+": ") {
						lines = append(lines, l)
					}
				}
				return lines
			}
			for len(reports()) == 0 {
				if time.Since(started) > 5*time.Second {
					t.Fatalf("no report on stderr 5 s after the start; stderr: %s", p.stderr)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := reports(); len(got) != 1 || !strings.HasPrefix(got[0], first) || !strings.HasSuffix(got[0], "(further failures are reported at most once per 1m0s)") {
				t.Fatalf("reports %q, want one line starting %q", got, first)
			}
			time.Sleep(time.Second) // the agent logs its start: failures within the minute are not reported
			if got := reports(); len(got) != 1 {
				t.Fatalf("reports %q, want one within the minute", got)
			}
			if code := p.stop(t, syscall.SIGTERM); code != 0 {
				t.Fatalf("exit code %d, want 0: a log that cannot be written does not stop the agent; stderr: %s", code, p.stderr)
			}
			got := reports()
			if len(got) != 2 || !strings.Contains(got[1], " since the last report, the last: ") {
				t.Fatalf("after the stop, reports %q, want a second one with the failures left out", got)
			}
		})
	}
}
