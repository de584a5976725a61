package main

// The runs at once per group, from three sources: the committed runs (the effect rows, by the
// database's clock), the task rows' start and stop (the last attempt, by the agent's clock), and
// the agents' logs (every attempt an agent started, also one rolled back, by the agent's clock).

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// span is one run of a group, from its start to its stop.
type span struct {
	group       string
	max         int
	start, stop time.Time
	what        string
}

// overMax is how far the runs at once in a group went past max + 1.
type overMax struct {
	worst   int    // the most runs past max + 1 at one moment
	moments int    // starts that took a group past max + 1
	example string // the first such moment
	spans   int
}

// effectSpans are the committed runs, by the database's clock: the input's transaction start to
// its effect's insert (runs a fault rolled back are not seen).
func effectSpans(effects []effect) []span {
	out := make([]span, 0, len(effects))
	for _, ef := range effects {
		g, _ := strconv.Atoi(strings.TrimPrefix(ef.group, "g"))
		out = append(out, span{ef.group, groupMax(g), ef.started, ef.stopped, fmt.Sprintf("k=%d on backend %d", ef.k, ef.pid)})
	}
	return out
}

// rowSpans are the ended tasks' last attempts, by the agent's clock: start and stop of the row.
func rowSpans(tasks []taskRow) []span {
	var out []span
	for _, t := range tasks {
		if t.start != nil && t.stop != nil && (t.state == "DONE" || t.state == "FAIL") {
			out = append(out, span{t.group, t.max, *t.start, *t.stop, fmt.Sprintf("task %d attempt %d", t.id, t.attempt)})
		}
	}
	return out
}

var (
	startedLine = regexp.MustCompile(`^firing\|task (\d+) started as \S+ \(attempt (\d+)\)`)
	endedLine   = regexp.MustCompile(`^(?:firing|stopping)\|task (\d+) (?:done in|failed|ends DONE|cancelled)`)
)

// logSpans are the runs the agents logged: from "task N started" to the same agent's next line
// ending task N, or, when there is none (the agent was killed), to the agent's exit.
func logSpans(lines []logLine, tasks []taskRow, exits map[int]time.Time) []span {
	byID := map[int64]taskRow{}
	for _, t := range tasks {
		byID[t.id] = t
	}
	type key struct {
		agent int
		id    int64
	}
	open := map[key]logLine{}
	var out []span
	add := func(k key, started logLine, stop time.Time) {
		if t, ok := byID[k.id]; ok {
			m := startedLine.FindStringSubmatch(started.text)
			out = append(out, span{t.group, t.max, started.at, stop, fmt.Sprintf("task %d attempt %s by agent %d", k.id, m[2], k.agent)})
		}
	}
	for _, l := range lines {
		if m := startedLine.FindStringSubmatch(l.text); m != nil {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			open[key{l.agent, id}] = l
		} else if m := endedLine.FindStringSubmatch(l.text); m != nil {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			if started, ok := open[key{l.agent, id}]; ok {
				add(key{l.agent, id}, started, l.at)
				delete(open, key{l.agent, id})
			}
		}
	}
	for k, started := range open {
		add(k, started, exits[k.agent])
	}
	return out
}

// overLimit sweeps each group's runs in time order and finds the moments with more than max + 1
// at once. At equal times a stop counts before a start: a run that starts as another stops does
// not overlap it.
func overLimit(spans []span) overMax {
	byGroup := map[string][]span{}
	out := overMax{spans: len(spans)}
	for _, s := range spans {
		if s.stop.After(s.start) { // an instant run (an adopted task's row) overlaps nothing
			byGroup[s.group] = append(byGroup[s.group], s)
		}
	}
	groups := make([]string, 0, len(byGroup))
	for g := range byGroup {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		type event struct {
			at    time.Time
			delta int
			i     int // the span's index in the group
		}
		var events []event
		for i, s := range byGroup[g] {
			events = append(events, event{s.start, +1, i}, event{s.stop, -1, i})
		}
		sort.Slice(events, func(i, j int) bool {
			if !events[i].at.Equal(events[j].at) {
				return events[i].at.Before(events[j].at)
			}
			return events[i].delta < events[j].delta
		})
		running := map[int]span{}
		for _, ev := range events {
			if ev.delta < 0 {
				delete(running, ev.i)
				continue
			}
			s := byGroup[g][ev.i]
			running[ev.i] = s
			limit := s.max + 1
			if len(running) <= limit {
				continue
			}
			out.moments++
			if len(running)-limit > out.worst || out.example == "" {
				out.worst = max(out.worst, len(running)-limit)
				out.example = describeMoment(g, s.max, ev.at, running)
			}
		}
	}
	return out
}

func describeMoment(group string, maxRuns int, at time.Time, running map[int]span) string {
	var parts []string
	for _, s := range running {
		parts = append(parts, fmt.Sprintf("%s %s..%s", s.what, s.start.Format("15:04:05.000"), s.stop.Format("15:04:05.000")))
	}
	sort.Strings(parts)
	return fmt.Sprintf("group %s (max %d) at %s: %d at once: %s", group, maxRuns, at.Format("15:04:05.000"), len(running), strings.Join(parts, "; "))
}
