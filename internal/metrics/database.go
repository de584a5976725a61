package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pgjobs/pgjobs/internal/printable"
)

// Database is the metrics of one database agent. Its methods do nothing on a nil *Database (an
// agent without metrics) or once the database left the configuration.
type Database struct {
	a        *Agent
	id, name string
	gone     atomic.Bool // Forget removed its series: nothing adds them again

	jobsMu sync.Mutex
	jobs   map[string]bool // the job_name labels in use: job names, and OtherJobs once used
}

// off reports whether d records nothing.
func (d *Database) off() bool { return d == nil || d.gone.Load() }

// State sets the database agent's state: up (it has a session on the database), active (it leads)
// or standing by behind a live leader; ready is up and either.
func (d *Database) State(up, active, standby bool) {
	if d.off() {
		return
	}
	set := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	d.a.up.WithLabelValues(d.id, d.name).Set(set(up))
	d.a.active.WithLabelValues(d.id, d.name).Set(set(up && active))
	d.a.standby.WithLabelValues(d.id, d.name).Set(set(up && standby))
	d.a.ready.WithLabelValues(d.id, d.name).Set(set(up && (active || standby)))
}

// Outage counts an outage of the database agent's session.
func (d *Database) Outage() {
	if d.off() {
		return
	}
	d.a.reconnects.WithLabelValues(d.id, d.name).Inc()
}

// jobLabel returns the job_name label of a job: its name while the database has fewer than
// MaxJobs names, OtherJobs past them. A job a role named "(other)" gets \(other), which no other
// name's label can be (labelValue doubles a backslash), so that it never counts with the jobs past
// the bound.
func (d *Database) jobLabel(job string) string {
	job = labelValue(job)
	if job == OtherJobs {
		job = `\` + OtherJobs
	}
	d.jobsMu.Lock()
	defer d.jobsMu.Unlock()
	if d.jobs[job] {
		return job
	}
	if len(d.jobs) >= d.a.maxJobs {
		job = OtherJobs
		if d.jobs[job] {
			return job
		}
	}
	d.jobs[job] = true
	// Every status of a new label starts at 0, so that increase() sees a job's first failure.
	for _, status := range runStatuses {
		d.a.runs.WithLabelValues(d.id, d.name, job, status)
	}
	return job
}

// runStatuses are the statuses of pgjobs_job_runs_total.
var runStatuses = []string{"ok", "error", "cancelled", "abandoned", "skipped", "missed"}

// RunEnded counts a run of a job that started on a session at started and ended with status at
// finished; scheduled is its fire time, nil for a run not on a schedule (a startup or manual run),
// whose start delay is not observed.
func (d *Database) RunEnded(job, status string, scheduled *time.Time, started, finished time.Time) {
	if d.off() {
		return
	}
	d.a.runs.WithLabelValues(d.id, d.name, d.jobLabel(job), status).Inc()
	if scheduled != nil {
		d.a.startDelay.WithLabelValues(d.id, d.name).Observe(max(0, started.Sub(*scheduled).Seconds()))
	}
	if !finished.IsZero() {
		d.a.runDuration.WithLabelValues(d.id, d.name).Observe(max(0, finished.Sub(started).Seconds()))
	}
}

// Fires counts n fires of a job that did not run, or whose run's start is unknown: skipped,
// missed, abandoned, or an error before the run began.
func (d *Database) Fires(job, status string, n int) {
	if d.off() || n <= 0 {
		return
	}
	d.a.runs.WithLabelValues(d.id, d.name, d.jobLabel(job), status).Add(float64(n))
}

// TaskStarted observes how long a task waited from its plan to its start.
func (d *Database) TaskStarted(waited time.Duration) {
	if d.off() {
		return
	}
	d.a.taskWait.WithLabelValues(d.id, d.name).Observe(max(0, waited.Seconds()))
}

// TaskEnded counts a task run that ended with the task in state (DONE, FAIL or GONE) after ran
// (0 when it never ran: a GONE task).
func (d *Database) TaskEnded(state string, ran time.Duration) {
	if d.off() {
		return
	}
	d.a.tasksEnded.WithLabelValues(d.id, d.name, state).Inc()
	if ran > 0 {
		d.a.taskRun.WithLabelValues(d.id, d.name).Observe(ran.Seconds())
	}
}

// TaskRetried counts a failed task run planned again.
func (d *Database) TaskRetried() {
	if d.off() {
		return
	}
	d.a.taskRetries.WithLabelValues(d.id, d.name).Inc()
}

// TasksReset counts n tasks of a dead agent put back to PLAN.
func (d *Database) TasksReset(n int) {
	if d.off() || n <= 0 {
		return
	}
	d.a.taskResets.WithLabelValues(d.id, d.name).Add(float64(n))
}

// labelValue returns s as a label value: valid UTF-8, as Prometheus requires (a role may name a job
// or a task group with any bytes in a SQL_ASCII database), with no control or format character
// (a scrape read with curl is shown on a terminal), and never the label of another name: invalid
// bytes, control and format characters escaped (\xff, \x1b, \u202e), backslashes doubled.
func labelValue(s string) string { return printable.Exact(s) }
