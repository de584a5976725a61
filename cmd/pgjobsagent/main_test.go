package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/internal/pgtest"
	"github.com/pgjobs/pgjobs/internal/syncbuf"
	"github.com/pgjobs/pgjobs/sqlschema"
)

var (
	binary  string
	cluster *pgtest.Cluster
)

func TestMain(m *testing.M) { os.Exit(buildAndRun(m)) }

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "pgjobsagent-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "pgjobsagent")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build pgjobsagent: %v\n%s", err, out)
		return 1
	}
	return pgtest.Main(m, &cluster)
}

// enabled returns an enabled database with a startup job, and a configuration file naming it
// at loglevel level.
func enabled(t *testing.T, level int) (db, conf string) { return enabledOn(t, cluster, level) }

// enabledOn is enabled on the cluster c.
func enabledOn(t *testing.T, c *pgtest.Cluster, level int) (db, conf string) {
	t.Helper()
	ctx := context.Background()
	db = c.NewDatabase(t)
	conn := c.Connect(t, db)
	if err := sqlschema.Install(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE hits (at timestamptz DEFAULT now());
		CREATE FUNCTION hit() RETURNS void LANGUAGE sql AS 'INSERT INTO hits DEFAULT VALUES';
		SELECT pgjobs.pgj_create_startup_job('Hit', 'hit()');
		CREATE FUNCTION boom() RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'boom'; END $$;
		SELECT pgjobs.pgj_create_startup_job('Boom', 'boom()')`); err != nil {
		t.Fatal(err)
	}
	conf = filepath.Join(t.TempDir(), "pgjobs.conf")
	text := fmt.Sprintf("system=1.00\nmaster=%d\n7=%s|%d|%s|%d|%s|none|none\n", level, c.Host(), c.Port(), db, level, c.User())
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return db, conf
}

// agentProcess is a running pgjobsagent.
type agentProcess struct {
	cmd    *exec.Cmd
	stderr *syncbuf.Buffer
	logDir string
}

func startAgent(t *testing.T, conf string, extra ...string) *agentProcess {
	t.Helper()
	p := &agentProcess{stderr: &syncbuf.Buffer{}, logDir: filepath.Join(t.TempDir(), "log")}
	p.cmd = exec.Command(binary, append([]string{"--config", conf, "--log-dir", p.logDir, "--grace", "2s"}, extra...)...)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

func (p *agentProcess) stop(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("pgjobsagent did not stop on %v", sig)
	}
	return p.cmd.ProcessState.ExitCode()
}

// logLines returns the lines of an agent's log of today.
func (p *agentProcess) logLines(t *testing.T, agent string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(p.logDir, agent, time.Now().Format("2006.01.02")+".log"))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitStartupRuns waits for the two startup runs of a database made by enabled to be recorded.
func waitStartupRuns(t *testing.T, db string) {
	t.Helper()
	conn := cluster.Connect(t, db)
	waitFor(t, "both startup runs", func() bool {
		var n int
		err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pgjobs.pgj_run_ WHERE runstatus <> 'running'").Scan(&n)
		return err == nil && n == 2
	})
}

var logLine = regexp.MustCompile(`^\d{4}\.\d{2}\.\d{2}\|\d{2}:\d{2}:\d{2}\.\d{3}\|[a-z]+\|.+$`)

func containsLine(lines []string, part string) bool {
	for _, l := range lines {
		if strings.Contains(l, part) {
			return true
		}
	}
	return false
}

// TestLogsAtEachLevel: the spec's paths and line format; level 0 has only errors, 1 adds the
// essential events, 2 each run, 5 debugging.
func TestLogsAtEachLevel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		level                     int
		essential, eachRun, debug bool
	}{
		{0, false, false, false},
		{1, true, false, false},
		{2, true, true, false},
		{5, true, true, true},
	} {
		t.Run(strconv.Itoa(tt.level), func(t *testing.T) {
			t.Parallel()
			db, conf := enabled(t, tt.level)
			p := startAgent(t, conf)
			waitStartupRuns(t, db)
			if code := p.stop(t, syscall.SIGTERM); code != 0 {
				t.Fatalf("exit code %d after SIGTERM; stderr %s", code, p.stderr)
			}
			// Whatever the level, one line on standard error at the start and one at the stop, and a
			// warning before them when the agent runs as root.
			wantStderr := ""
			if os.Geteuid() == 0 {
				wantStderr = "pgjobsagent: warning: running as root; run it as the postgres OS user (the init script and the systemd unit do)\n"
			}
			wantStderr += fmt.Sprintf("pgjobsagent: started, pid %d: configuration %s, logs in %s at master log level %d, serving 1 database: 7 %s:%d/%s\npgjobsagent: stopped on terminated\n",
				p.cmd.Process.Pid, conf, p.logDir, tt.level, cluster.Host(), cluster.Port(), db)
			if got := p.stderr.String(); got != wantStderr {
				t.Errorf("standard error:\n%s\nwant:\n%s", got, wantStderr)
			}
			dbLog, master := p.logLines(t, "7"), p.logLines(t, "master")
			if os.Geteuid() == 0 && !containsLine(master, "warning: pgjobsagent runs as root") {
				t.Errorf("the master log at level %d does not warn that the agent runs as root:\n%s", tt.level, strings.Join(master, "\n"))
			}
			for _, l := range append(append([]string{}, dbLog...), master...) {
				if l != "" && !logLine.MatchString(l) {
					t.Errorf("not a date|time|status|message line: %q", l)
				}
			}
			checks := []struct {
				lines []string
				part  string
				want  bool
			}{
				{dbLog, `|firing|job "Boom" of "` + cluster.User() + `" failed: boom`, tt.essential}, // "job failed" is essential (level 1)
				{dbLog, "|starting|active on ", tt.essential},
				{master, "|starting|pgjobsagent starting", tt.essential},
				{master, "|stopped|pgjobsagent stopped", tt.essential},
				{dbLog, `|firing|job "Hit" of "` + cluster.User() + `" done`, tt.eachRun},
				{dbLog, "|sleeping|", tt.debug},
			}
			for _, c := range checks {
				if containsLine(c.lines, c.part) != c.want {
					t.Errorf("level %d: line with %q present = %v, want %v\ndb log:\n%s\nmaster log:\n%s", tt.level, c.part, !c.want, c.want, strings.Join(dbLog, "\n"), strings.Join(master, "\n"))
				}
			}
		})
	}
}

func TestCheckConfig(t *testing.T) {
	t.Parallel()
	db, conf := enabled(t, 0)
	out, err := exec.Command(binary, "--check-config", "--config", conf).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("agent 7 (%s:%d/%s): ok", cluster.Host(), cluster.Port(), db)) {
		t.Fatalf("check of a good configuration: %v\n%s", err, out)
	}
	bad := filepath.Join(t.TempDir(), "bad.conf")
	other := cluster.NewDatabase(t)
	text := fmt.Sprintf("system=1.00\nmaster=0\n1=%s|%d|%s|0|%s|none\n", cluster.Host(), cluster.Port(), other, cluster.User())
	if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--check-config", "--config", bad)
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "pgjobs is not enabled in this database") {
		t.Fatalf("check of an unenabled database: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
	if err := os.WriteFile(bad, []byte("master=9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(binary, "--check-config", "--config", bad)
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), bad+`:1: master loglevel "9" is out of range 0..5`) {
		t.Fatalf("check of a broken file: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
}

// TestReloadKeepsTheLastGoodConfiguration: a broken file is logged with file:line and changes
// nothing; a good change is applied without a restart.
func TestReloadKeepsTheLastGoodConfiguration(t *testing.T) {
	t.Parallel()
	_, conf := enabled(t, 1)
	p := startAgent(t, conf, "--pidfile", filepath.Join(t.TempDir(), "agent.pid"))
	waitFor(t, "the agent to be active", func() bool { return containsLine(p.logLines(t, "7"), "active on") })
	good, _ := os.ReadFile(conf)
	if err := os.WriteFile(conf, append(good, []byte("8=nohost|5432|x|9|postgres|none\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the broken file to be reported", func() bool {
		return containsLine(p.logLines(t, "master"), `configuration not reloaded, the last good one stays: `+conf+`:4: loglevel "9" is out of range 0..5`)
	})
	db2, _ := enabled(t, 1)
	row := fmt.Sprintf("9=%s|%d|%s|1|%s|none\n", cluster.Host(), cluster.Port(), db2, cluster.User())
	if err := os.WriteFile(conf, append(good, []byte(row)...), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the added database's agent", func() bool { return containsLine(p.logLines(t, "9"), "active on") })
	if code := p.stop(t, syscall.SIGINT); code != 0 {
		t.Fatalf("exit code %d after SIGINT", code)
	}
}

func TestUsage(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(binary, "--bogus")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || string(out) != "pgjobsagent: flag provided but not defined: -bogus\nusage: "+usageLine+"\n" {
		t.Fatalf("exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
	// What the error line quotes is escaped: here a flag, elsewhere a path or a server's message.
	cmd = exec.Command(binary, "--bogus\x1b[2J")
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 2 || !strings.HasPrefix(string(out), "pgjobsagent: flag provided but not defined: -bogus\\x1b[2J\n") {
		t.Fatalf("an unknown flag with an escape: exit %d: %q", cmd.ProcessState.ExitCode(), out)
	}
	out, err := exec.Command(binary, "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Example:") {
		t.Fatalf("--help: %v %s", err, out)
	}
	// The usage line lists every option --help lists.
	for _, option := range regexp.MustCompile(`(?m)^   (--[a-z-]+)`).FindAllStringSubmatch(string(out), -1) {
		if !strings.Contains(usageLine, "["+option[1]) {
			t.Errorf("the usage line lacks %s: %s", option[1], usageLine)
		}
	}
}

// TestStandbyTakesOverWhenTheActiveAgentDies: two agents on one database; the first is killed
// (SIGKILL) in the middle of a run; the second takes over within 5 s and marks the run abandoned.
func TestStandbyTakesOverWhenTheActiveAgentDies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	conn := cluster.Connect(t, db)
	if err := sqlschema.Install(ctx, conn); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "SELECT pgjobs.pgj_create_startup_job('Long', 'pg_sleep(30)')"); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "pgjobs.conf")
	text := fmt.Sprintf("system=1.00\nmaster=1\n3=%s|%d|%s|1|%s|none\n", cluster.Host(), cluster.Port(), db, cluster.User())
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	first := startAgent(t, conf)
	waitFor(t, "the first agent's run", func() bool {
		var n int
		err := conn.QueryRow(ctx, "SELECT count(*) FROM pgjobs.pgj_run_ WHERE runstatus = 'running'").Scan(&n)
		return err == nil && n == 1
	})
	second := startAgent(t, conf)
	waitFor(t, "the second agent to stand by", func() bool { return containsLine(second.logLines(t, "3"), "standing by to take over") })
	killed := time.Now()
	if code := first.stop(t, syscall.SIGKILL); code != -1 {
		t.Fatalf("SIGKILL: exit code %d", code)
	}
	waitFor(t, "the takeover", func() bool { return containsLine(second.logLines(t, "3"), "taking over as the active agent") })
	if took := time.Since(killed); took > 5*time.Second {
		t.Fatalf("the takeover took %s, want at most 5 s", took)
	}
	waitFor(t, "the abandoned run", func() bool {
		var status string
		err := conn.QueryRow(ctx, "SELECT runstatus FROM pgjobs.pgj_run_ ORDER BY runid LIMIT 1").Scan(&status)
		return err == nil && status == "abandoned"
	})
	if code := second.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d", code)
	}
}

// TestHungAgentIsReplaced: two agents on one database; the active one is stopped (SIGSTOP), its
// session alive; the standby takes the lead within 15 s, and a job due in the next minute runs
// once, on the standby, within 15 s of its minute. Resumed (SIGCONT), the old agent finds it lost
// the lead, fires nothing, and stands by.
func TestHungAgentIsReplaced(t *testing.T) {
	t.Parallel()
	db, conf := enabled(t, 1)
	ctx := context.Background()
	conn := cluster.Connect(t, db)
	// A job due at the first minute that starts at least 20 s from now, by the agents' local clock.
	due := time.Now().Add(20 * time.Second).Truncate(time.Minute).Add(time.Minute)
	if _, err := conn.Exec(ctx, fmt.Sprintf(`SELECT pgjobs.pgj_create_schedule('Due', 'D %d:%02d'),
		pgjobs.pgj_create_job('Due', 'hit()', null, 'Due')`, due.Hour(), due.Minute())); err != nil {
		t.Fatal(err)
	}
	first := startAgent(t, conf)
	waitFor(t, "the first agent to lead", func() bool { return containsLine(first.logLines(t, "7"), "active on") })
	second := startAgent(t, conf)
	waitFor(t, "the second agent to stand by", func() bool { return containsLine(second.logLines(t, "7"), "standing by to take over") })
	if err := first.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waitFor(t, "the takeover", func() bool { return containsLine(second.logLines(t, "7"), "taking over as the active agent") })
	if took := time.Since(stopped); took > 15*time.Second {
		t.Fatalf("the takeover took %s, want at most 15 s", took)
	}
	if !containsLine(second.logLines(t, "7"), "left pings unanswered for 8s: taking the lead from it") {
		t.Fatalf("no warning in the log:\n%s", strings.Join(second.logLines(t, "7"), "\n"))
	}
	// The job due after the stop runs once, on the standby, within 15 s of its minute.
	var runs int
	var late time.Duration
	var agent string
	deadline := time.Now().Add(90 * time.Second)
	for runs == 0 && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		err := conn.QueryRow(ctx, `SELECT count(*), coalesce(max(runstarted - runscheduled), '0'), coalesce(max(runagent), '')
			FROM pgjobs.pgj_run_ WHERE runjobname = 'Due' AND runstatus <> 'running'`).Scan(&runs, &late, &agent)
		if err != nil {
			t.Fatal(err)
		}
	}
	if runs != 1 || late > 15*time.Second || !strings.Contains(agent, fmt.Sprint(second.cmd.Process.Pid)) {
		t.Fatalf("the job due at %s: %d runs, %s late, by %q (want once, within 15 s, by pid %d)", due.Format(time.TimeOnly), runs, late, agent, second.cmd.Process.Pid)
	}
	if err := first.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the old agent to stand by", func() bool {
		lines := first.logLines(t, "7")
		return containsLine(lines, "lost the lead") && strings.Count(strings.Join(lines, "\n"), "standing by to take over") == 1
	})
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pgjobs.pgj_run_ WHERE runjobname = 'Due'").Scan(&runs); err != nil || runs != 1 {
		t.Fatalf("runs of the job due at %s after the old agent resumed: %d, %v", due.Format(time.TimeOnly), runs, err)
	}
	for _, p := range []*agentProcess{first, second} {
		if code := p.stop(t, syscall.SIGTERM); code != 0 {
			t.Fatalf("exit code %d", code)
		}
	}
}
