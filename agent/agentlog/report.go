package agentlog

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// ReportInterval is the shortest time between two reports on Options.Errors about one Handler's files: the
// first failure is reported at once, the next ones at most once per ReportInterval, each report saying how
// many failures it stands for.
const ReportInterval = time.Minute

// reporter reports the failed writes of an output on a writer, at most once per ReportInterval. The
// output's lock guards it.
type reporter struct {
	w     io.Writer
	now   func() time.Time
	agent string

	last    time.Time // when the last report was written; zero before the first
	failing bool      // a write failed since the last report that the log is written again
	missed  int       // failures since the last report that no report showed
	lastErr error     // the last of those failures
}

// failed reports err, the error of a failed write, unless the last report is less than ReportInterval old;
// then it counts it for the next report.
func (r *reporter) failed(err error) {
	r.failing = true
	now := r.now()
	if !r.last.IsZero() && now.Sub(r.last) < ReportInterval {
		r.missed++
		r.lastErr = err
		return
	}
	msg := "cannot write, log lines are lost: " + oneLine(err)
	if r.missed > 0 {
		msg += " (" + more(r.missed) + " since the last report)"
	} else if r.last.IsZero() {
		msg += fmt.Sprintf(" (further failures are reported at most once per %s)", ReportInterval)
	}
	r.report(now, msg)
}

// succeeded notes a write that worked. After failures it reports that the log is written again, as soon as
// the last report is ReportInterval old.
func (r *reporter) succeeded() {
	if !r.failing {
		return
	}
	now := r.now()
	if now.Sub(r.last) < ReportInterval {
		return
	}
	msg := "written again"
	if r.missed > 0 {
		msg += " (" + more(r.missed) + " since the last report, the last: " + oneLine(r.lastErr) + ")"
	}
	r.failing = false
	r.report(now, msg)
}

// flush reports the failures that no report showed yet, at once: for Close.
func (r *reporter) flush() {
	if r.missed == 0 {
		return
	}
	r.report(r.now(), more(r.missed)+" since the last report, the last: "+oneLine(r.lastErr))
}

// report writes msg about the agent's log as one line, in a single Write, and starts a new interval.
func (r *reporter) report(now time.Time, msg string) {
	// Nothing is left to report a failure of the report itself to.
	_, _ = io.WriteString(r.w, "agentlog: log of agent "+r.agent+": "+msg+"\n")
	r.last, r.missed, r.lastErr = now, 0, nil
}

// oneLine returns the message of err on one line: the errors an errors.Join holds, separated by "; ".
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

// more returns "1 more failure" or "N more failures".
func more(n int) string {
	if n == 1 {
		return "1 more failure"
	}
	return fmt.Sprintf("%d more failures", n)
}
