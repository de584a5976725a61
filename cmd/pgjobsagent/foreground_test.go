package main

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// TestForegroundNamesTheAgent: with --foreground, each log line on standard error follows its
// agent's name and a | (master, or the database's id), so that the lines of several databases
// can be told apart; the log files keep date|time|status|message.
func TestForegroundNamesTheAgent(t *testing.T) {
	t.Parallel()
	db, conf := enabled(t, 2)
	p := startAgent(t, conf, "--foreground")
	waitStartupRuns(t, db)
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; stderr %s", code, p.stderr)
	}
	named := regexp.MustCompile(`^(master|7)\|(.*)$`)
	byAgent := map[string][]string{}
	for _, l := range strings.Split(strings.TrimSuffix(p.stderr.String(), "\n"), "\n") {
		if strings.HasPrefix(l, "pgjobsagent: ") { // the program's own start and stop
			continue
		}
		m := named.FindStringSubmatch(l)
		if m == nil || !logLine.MatchString(m[2]) {
			t.Errorf("not an agent's name, a | and a log line: %q", l)
			continue
		}
		byAgent[m[1]] = append(byAgent[m[1]], m[2])
	}
	if !containsLine(byAgent["7"], `|firing|job "Hit" of "`+cluster.User()+`" done`) || !containsLine(byAgent["master"], "|starting|pgjobsagent starting") ||
		containsLine(byAgent["master"], `job "Hit"`) {
		t.Errorf("standard error does not name each line's agent:\n%s", p.stderr)
	}
	for _, agent := range []string{"7", "master"} {
		for _, l := range p.logLines(t, agent) {
			if !logLine.MatchString(l) {
				t.Errorf("the log file of %s has %q, not a date|time|status|message line", agent, l)
			}
		}
	}
}
