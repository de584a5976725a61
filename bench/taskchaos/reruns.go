package main

// Re-runs, matched to the faults.

import (
	"fmt"
	"strings"
)

// reruns is the figure of the tasks that ran more than once.
type reruns struct {
	tasks     int   // tasks with more than one attempt
	extra     int   // attempts beyond the first
	matched   int   // tasks whose every earlier attempt a fault caught
	perFault  []int // earlier attempts each fault caught that were run again
	unmatched []string
}

// matchReruns matches each attempt that was followed by another to a fault.
//
// Why this is sound: the agent counts an attempt only when it claims a row (PLAN to TAKE,
// attempt + 1). None of these tasks has retries, so the only way from an attempt to the next is a
// row put back to PLAN without its end written: the reset, which the next leader does for rows an
// agent gone left claimed. So every attempt a of a task with a later one must have been claimed
// (TAKE or WORK, attempt a) at the moment of one of the faults: read right after a kill (the dead
// agent's rows, before the standby can take over), just before and right after the restart, and
// at the terminated backend's task. An attempt run again that no fault caught is a reset of a run
// that was not abandoned: unmatched.
func matchReruns(tasks []taskRow, faults []*fault, lines []logLine) reruns {
	r := reruns{perFault: make([]int, len(faults))}
	for _, t := range tasks {
		if t.attempt < 2 {
			continue
		}
		r.tasks++
		r.extra += t.attempt - 1
		ok := true
		for a := 1; a < t.attempt; a++ {
			caught := -1
			for i, f := range faults {
				if f.caught(attemptKey{t.id, a}) {
					caught = i
					break
				}
			}
			if caught < 0 {
				ok = false
				continue
			}
			r.perFault[caught]++
		}
		if ok {
			r.matched++
			continue
		}
		var b strings.Builder
		fmt.Fprintf(&b, "task %d (k=%d) %s at attempt %d: an earlier attempt was caught by no fault", t.id, t.k, t.state, t.attempt)
		for _, l := range taskLines(lines, t.id) {
			fmt.Fprintf(&b, "\n      %s", l)
		}
		r.unmatched = append(r.unmatched, b.String())
	}
	return r
}
