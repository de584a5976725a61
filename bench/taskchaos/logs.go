package main

// Reading the agents' logs: DIR/1/YYYY.MM.DD.log, lines "date|time|status|message".

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// logLine is a line of an agent's database log.
type logLine struct {
	agent int // agentProc.n
	at    time.Time
	text  string // status|message
}

// logLines returns the agent's database log, oldest first; a line that does not parse (cut off
// by a kill) is left out.
func (p *agentProc) logLines() []logLine {
	files, _ := filepath.Glob(filepath.Join(p.logDir, strconv.Itoa(agentID), "*.log"))
	sort.Strings(files)
	var lines []logLine
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			parts := strings.SplitN(l, "|", 3)
			if len(parts) < 3 {
				continue
			}
			at, err := time.ParseInLocation("2006.01.02|15:04:05.000", parts[0]+"|"+parts[1], time.Local)
			if err != nil {
				continue
			}
			lines = append(lines, logLine{agent: p.n, at: at, text: parts[2]})
		}
	}
	return lines
}

// logLines returns the database log lines of every agent of the run.
func (f *fleet) logLines() []logLine {
	var all []logLine
	for _, p := range f.procs {
		all = append(all, p.logLines()...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	return all
}

// leadState returns what the agent's log last said about the lead: "active", "standby" or "".
func leadState(lines []logLine) string {
	state := ""
	for _, l := range lines {
		switch {
		case strings.Contains(l.text, "standing by to take over"):
			state = "standby"
		case strings.Contains(l.text, "|active on "), strings.Contains(l.text, "taking over as the active agent"):
			state = "active"
		}
	}
	return state
}

var (
	resetLine = regexp.MustCompile(`(\d+) tasks left claimed or running by an agent gone were put back to PLAN`)
	adoptLine = regexp.MustCompile(`(\d+) tasks left running by an agent gone had committed their work`)
)

// loggedResets adds up the tasks the agents said they put back to PLAN, and those they said they
// ended DONE because their work had committed (adopted).
func loggedResets(lines []logLine) (reset, adopted int) {
	for _, l := range lines {
		if m := resetLine.FindStringSubmatch(l.text); m != nil {
			k, _ := strconv.Atoi(m[1])
			reset += k
		}
		if m := adoptLine.FindStringSubmatch(l.text); m != nil {
			k, _ := strconv.Atoi(m[1])
			adopted += k
		}
	}
	return reset, adopted
}

// taskLines returns the lines that name task id, for the report of a case that failed a check.
func taskLines(lines []logLine, id int64) []string {
	needle := "task " + strconv.FormatInt(id, 10) + " "
	var out []string
	for _, l := range lines {
		if strings.Contains(l.text, needle) {
			out = append(out, l.at.Format("15:04:05.000")+" agent "+strconv.Itoa(l.agent)+": "+l.text)
		}
	}
	return out
}
