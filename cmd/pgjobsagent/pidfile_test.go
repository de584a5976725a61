package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// emptyConfig returns a configuration file without databases: the agent runs, and does nothing.
func emptyConfig(t *testing.T) string {
	t.Helper()
	conf := filepath.Join(t.TempDir(), "pgjobs.conf")
	if err := os.WriteFile(conf, []byte("system=1.00\nmaster=1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return conf
}

// exitCode waits for the agent to end by itself and returns its exit code.
func (p *agentProcess) exitCode(t *testing.T) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		t.Fatalf("pgjobsagent did not exit by itself; stderr: %s", p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// readPid returns what the pid file holds, "" if it is missing.
func readPid(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

// holds reports whether the pid file holds the agent's process id.
func (p *agentProcess) holds(t *testing.T, name string) bool {
	return readPid(t, name) == strconv.Itoa(p.cmd.Process.Pid)+"\n"
}

// TestPidfileRefused: a pid file path that is a symbolic link, a hard link, a directory or a FIFO makes
// the agent refuse to start, and what it points to stays as it was.
func TestPidfileRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(t *testing.T, dir, pidfile string) (check func(t *testing.T))
		wantErr string
	}{
		{
			name: "symlink_to_a_file",
			setup: func(t *testing.T, dir, pidfile string) func(t *testing.T) {
				target := filepath.Join(dir, "precious")
				writeFile(t, target, "do not touch\n")
				symlink(t, target, pidfile)
				return func(t *testing.T) { wantContents(t, target, "do not touch\n") }
			},
			wantErr: "is a symbolic link",
		},
		{
			name: "dangling_symlink",
			setup: func(t *testing.T, dir, pidfile string) func(t *testing.T) {
				target := filepath.Join(dir, "created-through-the-link")
				symlink(t, target, pidfile)
				return func(t *testing.T) {
					if _, err := os.Lstat(target); !os.IsNotExist(err) {
						t.Errorf("the link's target was created: %v", err)
					}
				}
			},
			wantErr: "is a symbolic link",
		},
		{
			name: "hard_link",
			setup: func(t *testing.T, dir, pidfile string) func(t *testing.T) {
				target := filepath.Join(dir, "precious")
				writeFile(t, target, "do not touch\n")
				if err := os.Link(target, pidfile); err != nil {
					t.Fatal(err)
				}
				return func(t *testing.T) { wantContents(t, target, "do not touch\n") }
			},
			wantErr: "has 2 hard links",
		},
		{
			name: "directory",
			setup: func(t *testing.T, _, pidfile string) func(t *testing.T) {
				if err := os.Mkdir(pidfile, 0o755); err != nil {
					t.Fatal(err)
				}
				return func(*testing.T) {}
			},
			wantErr: "pid file: open",
		},
		{
			name: "fifo",
			setup: func(t *testing.T, _, pidfile string) func(t *testing.T) {
				if err := syscall.Mkfifo(pidfile, 0o644); err != nil {
					t.Fatal(err)
				}
				return func(*testing.T) {}
			},
			wantErr: "is not a regular file",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			pidfile := filepath.Join(dir, "agent.pid")
			check := tt.setup(t, dir, pidfile)
			p := startAgent(t, emptyConfig(t), "--pidfile", pidfile)
			if code := p.exitCode(t); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if msg := p.stderr.String(); !strings.Contains(msg, pidfile) || !strings.Contains(msg, tt.wantErr) {
				t.Errorf("stderr %q does not name %s and say %q", msg, pidfile, tt.wantErr)
			}
			check(t)
		})
	}
}

// TestPidfileSecondAgentRefused: a second agent with the pid file of a running one refuses to start,
// names the file and the first agent's pid, and leaves the file alone; the first removes it on exit.
func TestPidfileSecondAgentRefused(t *testing.T) {
	t.Parallel()
	conf := emptyConfig(t)
	pidfile := filepath.Join(t.TempDir(), "agent.pid")
	first := startAgent(t, conf, "--pidfile", pidfile)
	waitFor(t, "the first agent's pid file", func() bool { return first.holds(t, pidfile) })
	info, err := os.Stat(pidfile)
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("pid file %v, %v; want mode 0644", info, err)
	}

	second := startAgent(t, conf, "--pidfile", pidfile)
	if code := second.exitCode(t); code != 1 {
		t.Errorf("second agent: exit code %d, want 1", code)
	}
	want := "pid file " + pidfile + " is locked by process " + strconv.Itoa(first.cmd.Process.Pid)
	if !strings.Contains(second.stderr.String(), want) {
		t.Errorf("second agent's stderr %q does not say %q", second.stderr, want)
	}
	if !first.holds(t, pidfile) {
		t.Fatalf("after the second agent, the pid file holds %q, want the first's pid %d", readPid(t, pidfile), first.cmd.Process.Pid)
	}

	if code := first.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("first agent: exit code %d; stderr %s", code, first.stderr)
	}
	if _, err := os.Lstat(pidfile); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there after the agent stopped: %v", err)
	}
}

// TestPidfileStaleTakenOver: a pid file that no running agent locks is taken over, truncated and
// rewritten, and given mode 0644.
func TestPidfileStaleTakenOver(t *testing.T) {
	t.Parallel()
	pidfile := filepath.Join(t.TempDir(), "agent.pid")
	if err := os.WriteFile(pidfile, []byte("4194303\nleft over by an agent that crashed\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startAgent(t, emptyConfig(t), "--pidfile", pidfile)
	waitFor(t, "the pid file to be taken over", func() bool { return p.holds(t, pidfile) })
	if info, err := os.Stat(pidfile); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("pid file %v, %v; want mode 0644", info, err)
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d; stderr %s", code, p.stderr)
	}
	if _, err := os.Lstat(pidfile); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there after the agent stopped: %v", err)
	}
}

// TestPidfileRemovedOnlyIfOurs: when the pid file was removed and another agent now holds a new file at
// the path, the first agent leaves that file alone when it stops.
func TestPidfileRemovedOnlyIfOurs(t *testing.T) {
	t.Parallel()
	conf := emptyConfig(t)
	pidfile := filepath.Join(t.TempDir(), "agent.pid")
	first := startAgent(t, conf, "--pidfile", pidfile)
	waitFor(t, "the first agent's pid file", func() bool { return first.holds(t, pidfile) })
	if err := os.Remove(pidfile); err != nil {
		t.Fatal(err)
	}
	second := startAgent(t, conf, "--pidfile", pidfile)
	waitFor(t, "the second agent's pid file", func() bool { return second.holds(t, pidfile) })
	if code := first.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("first agent: exit code %d; stderr %s", code, first.stderr)
	}
	if !second.holds(t, pidfile) {
		t.Errorf("after the first agent stopped, the pid file holds %q, want the second's pid", readPid(t, pidfile))
	}
	if code := second.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("second agent: exit code %d; stderr %s", code, second.stderr)
	}
	if _, err := os.Lstat(pidfile); !os.IsNotExist(err) {
		t.Errorf("the pid file is still there after the second agent stopped: %v", err)
	}
}

func writeFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func wantContents(t *testing.T, name, want string) {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil || string(data) != want {
		t.Errorf("%s holds %q (%v), want %q", name, data, err, want)
	}
	if info, err := os.Stat(name); err == nil && info.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want it unchanged (0600)", name, info.Mode().Perm())
	}
}
