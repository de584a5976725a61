package main

// The figures block and the goals.

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// list counts the cases of a check and keeps the first few to show.
type list struct {
	n        int
	examples []string
}

func (l *list) add(format string, args ...any) {
	l.n++
	if len(l.examples) < 5 {
		l.examples = append(l.examples, fmt.Sprintf(format, args...))
	}
}

// figures is everything the run measured.
type figures struct {
	tasks      taskCounts
	wall       time.Duration
	throughput throughput
	faults     []*fault

	states                               map[string]int
	faultFails                           map[string]int                              // the errors of the runs a fault ended, by first line
	ended                                struct{ done, failing, byFault, ahead int } // the ends as expected
	unexpected, lost, failedApplied, dup list
	dupRows, dupNotRerun                 int
	overEffects, overRows, overLogs      overMax
	reruns                               reruns
	loggedResets, loggedAdopted          int // from the agents' logs
}

// print writes the figures and the goals missed, and reports whether every goal was met.
func (f *figures) print(w io.Writer) bool {
	var missed []string
	verdict := func(ok bool, what string) string {
		if ok {
			return "ok"
		}
		missed = append(missed, what)
		return "MISSED"
	}
	tc := f.tasks
	fmt.Fprintf(w, "\n== taskchaos figures ==\n")
	fmt.Fprintf(w, "tasks                   %d: %d short, %d long (pg_sleep 0.05..0.5 s), %d failing on purpose, %d planned a day ahead; max 0..3 per group; inserted as %s\n",
		tc.total, tc.byKind[short], tc.byKind[long], tc.byKind[failing], tc.byKind[ahead], roleName)
	fmt.Fprintf(w, "wall time               %.1f s\n", f.wall.Seconds())
	fmt.Fprintf(w, "faults                  %d\n", len(f.faults))
	for i, ft := range f.faults {
		fmt.Fprintf(w, "  %d at %s  %s; %s\n", i+1, ft.at.Format("15:04:05.000"), ft.name, ft.claimedStates())
	}
	fmt.Fprintf(w, "ended, by state         %s\n", byState(f.states))
	fmt.Fprintf(w, "  as expected           DONE %d, FAIL %d on purpose (division by zero), FAIL %d whose run a fault ended, PLAN %d planned ahead\n",
		f.ended.done, f.ended.failing, f.ended.byFault, f.ended.ahead)
	for _, reason := range sortedKeys(f.faultFails) {
		fmt.Fprintf(w, "    a fault ended %d with: %s\n", f.faultFails[reason], reason)
	}
	fmt.Fprintf(w, "  not as expected       %-8d goal 0   %s\n", f.unexpected.n, verdict(f.unexpected.n == 0, fmt.Sprintf("%d tasks did not end as expected", f.unexpected.n)))
	fmt.Fprintf(w, "effects applied twice   %-8d goal 0   %s   (%d extra rows; %d on tasks never re-run)\n", f.dup.n,
		verdict(f.dup.n == 0, fmt.Sprintf("%d tasks' effects applied twice", f.dup.n)), f.dupRows, f.dupNotRerun)
	fmt.Fprintf(w, "effects lost            %-8d goal 0   %s   (DONE without its effect)\n", f.lost.n, verdict(f.lost.n == 0, fmt.Sprintf("%d DONE tasks without their effect", f.lost.n)))
	fmt.Fprintf(w, "effects of failures     %-8d goal 0   %s   (FAIL, yet a run committed)\n", f.failedApplied.n,
		verdict(f.failedApplied.n == 0, fmt.Sprintf("%d FAIL tasks with a committed effect", f.failedApplied.n)))
	over := max(f.overEffects.worst, f.overRows.worst, f.overLogs.worst)
	fmt.Fprintf(w, "over max+1 in a group   %-8d goal 0   %s   (the worst excess at a moment, and the moments over max+1:)\n",
		over, verdict(over == 0, fmt.Sprintf("a group ran %d past max+1", over)))
	for _, o := range []struct {
		what string
		over overMax
	}{
		{"committed runs, their transactions", f.overEffects},
		{"task rows, start and stop", f.overRows},
		{"agents' logs, every attempt started", f.overLogs},
	} {
		fmt.Fprintf(w, "  %-36s worst %d, %d moments in %d runs\n", o.what, o.over.worst, o.over.moments, o.over.spans)
	}
	r := f.reruns
	fmt.Fprintf(w, "re-runs                 %-8d matched %d   %s   (tasks with attempt > 1: %d extra attempts, caught per fault %s; the agents logged %d put back to PLAN, %d ended DONE as committed)\n",
		r.tasks, r.matched, verdict(r.matched == r.tasks, fmt.Sprintf("%d re-runs matched to no fault", r.tasks-r.matched)), r.extra, ints(r.perFault), f.loggedResets, f.loggedAdopted)
	th := f.throughput
	starved := ""
	if th.starved {
		starved = "; the queue ran dry: raise -tasks"
	}
	fmt.Fprintf(w, "baseline throughput     %.1f tasks/s (its 2 s windows %.1f..%.1f%s)   %s\n", th.baseline, th.baseLow, th.baseHigh, starved,
		verdict(th.baseline > 0 && !th.starved, "no baseline throughput on a full queue"))
	fmt.Fprintf(w, "recovery to %.0f %%       the end of the first 2 s window after the fault at >= %.1f tasks/s; goal <= %s\n",
		100*recoveryShare, recoveryShare*th.baseline, recoveryGoal)
	for i, rc := range th.recoveries {
		ok := rc.recovered && rc.after <= recoveryGoal
		took := fmt.Sprintf("%5.1f s", rc.after.Seconds())
		if !rc.recovered {
			took = fmt.Sprintf("> %.0f s", rc.watched.Seconds())
		}
		fmt.Fprintf(w, "  %d %-24s %s   %s   (lowest 2 s window before it %.1f tasks/s)\n", i+1, rc.fault.kind, took,
			verdict(ok, fmt.Sprintf("recovery after fault %d (%s): %s", i+1, rc.fault.kind, strings.TrimSpace(took))), max(rc.dip, 0))
	}
	details(w, "not as expected", f.unexpected)
	details(w, "effects applied twice", f.dup)
	details(w, "effects lost", f.lost)
	details(w, "effects of failures", f.failedApplied)
	if f.overEffects.example != "" {
		fmt.Fprintf(w, "\nover max+1 (committed runs), the first worst moment:\n  %s\n", f.overEffects.example)
	}
	if f.overRows.example != "" {
		fmt.Fprintf(w, "\nover max+1 (task rows), the first worst moment:\n  %s\n", f.overRows.example)
	}
	if f.overLogs.example != "" {
		fmt.Fprintf(w, "\nover max+1 (agents' logs), the first worst moment:\n  %s\n", f.overLogs.example)
	}
	if len(r.unmatched) > 0 {
		details(w, "re-runs matched to no fault", list{n: len(r.unmatched), examples: r.unmatched[:min(5, len(r.unmatched))]})
	}
	fmt.Fprintln(w)
	if len(missed) == 0 {
		fmt.Fprintln(w, "every goal met")
		return true
	}
	for _, m := range missed {
		fmt.Fprintln(w, "MISSED:", m)
	}
	return false
}

func details(w io.Writer, title string, l list) {
	if l.n == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s: %d, the first %d:\n", title, l.n, len(l.examples))
	for _, e := range l.examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func byState(states map[string]int) string {
	var parts []string
	for _, s := range sortedKeys(states) {
		parts = append(parts, fmt.Sprintf("%s %d", s, states[s]))
	}
	return strings.Join(parts, ", ")
}

func ints(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = fmt.Sprint(n)
	}
	return strings.Join(parts, ", ")
}
