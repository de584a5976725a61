package jobs

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/schedule"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// job is a job as the agent plans it.
type job struct {
	id        int
	name      string
	call      string               // the function call, run as SELECT <call>
	owner     string               // the role the job runs as (its name when it was dropped)
	ownerID   uint32               // and its OID
	ownerGone bool                 // the role was dropped: the job does not run
	funcOID   uint32               // the function the call was resolved to when it was set; 0 for a version 1 call that could not be (it does not run)
	stored    sqlschema.StoredCall // the call's schema, name and form, for the guard
	view      string               // the view the call is bound to, schema-qualified
	viewCall  string               // SELECT from the view the call is bound to; "" for a call set before schema version 15
	callErr   error                // the call does not start with a schema-qualified name, or its view's name is not pgjobs': the job does not run
	startup   bool                 // run once when the agent starts
	start     *schedule.Schedule   // the start schedule, nil when none
	startSet  time.Time            // when the start schedule was set: it gates from its first fire after this
	every     []schedule.Schedule
	plannedAt *time.Time    // jobnextrun as the database has it: the fire planned before, if any
	lastFire  *time.Time    // the latest fire claimed, if any
	lastRun   bool          // whether lastFire has a run row
	timeout   time.Duration // a run's time limit, 0 when none
	resumed   *time.Time    // when it was last resumed after a pause, if ever
}

// storedJob builds a job as the agent plans it from its stored form, its schedules read in loc
// and interval schedules anchored at anchor.
func storedJob(s sqlschema.StoredJob, loc *time.Location, anchor time.Time) (*job, error) {
	owner := s.OwnerWas
	if s.Owner != nil {
		owner = *s.Owner
	}
	var timeout time.Duration
	if s.Timeout != nil {
		timeout = *s.Timeout
	}
	j := &job{id: s.ID, name: s.Name, call: s.Call, owner: owner, ownerID: s.OwnerID, ownerGone: s.Owner == nil,
		funcOID: s.FuncOID, startup: s.Startup, startSet: s.StartSet, plannedAt: s.NextRun, lastFire: s.LastFire, lastRun: s.LastFireRun, timeout: timeout, resumed: s.Resumed}
	switch {
	case s.View != "":
		j.viewCall, j.callErr = sqlschema.ViewCallSQL(s.View)
		j.view = s.View
	case j.funcOID != 0:
		j.stored, j.callErr = sqlschema.ParseStoredCall(s.Call)
	}
	if err := j.parseJobSchedules(s.StartSchedule, s.Schedules, loc, anchor); err != nil {
		return nil, err
	}
	return j, nil
}

// ownedBy returns a copy of the job for one run, with the name its owner's role has now: nil when
// the role was dropped.
func (j *job) ownedBy(owner *string) *job {
	run := *j
	run.ownerGone = owner == nil
	if owner != nil {
		run.owner = *owner
	}
	return &run
}

// activeFrom returns when a job becomes active: at once without a start schedule, else at the
// start schedule's first fire after the start schedule was set; false when that never comes.
func (j *job) activeFrom() (time.Time, bool) {
	if j.start == nil {
		return time.Time{}, true
	}
	return j.start.Next(j.startSet)
}

// nextFire returns the job's first fire strictly after `after`, and false when it never fires
// again. A job with a start schedule fires nothing before it is active; one without recurrence
// fires once, when it becomes active.
func (j *job) nextFire(after time.Time) (time.Time, bool) {
	active, ok := j.activeFrom()
	if !ok {
		return time.Time{}, false
	}
	if j.start != nil && len(j.every) == 0 {
		return active, active.After(after)
	}
	from := after
	if j.start != nil && active.After(from) {
		// Not active yet: the first recurrence at or after activation.
		from = active.Add(-time.Nanosecond)
	}
	var best time.Time
	found := false
	for i := range j.every {
		if t, ok := j.every[i].Next(from); ok && (!found || t.Before(best)) {
			best, found = t, true
		}
	}
	return best, found
}

// parseJobSchedules fills a job's schedules from their canonical texts, in loc and anchored at
// the agent's start.
func (j *job) parseJobSchedules(start *string, every []string, loc *time.Location, anchor time.Time) error {
	parse := func(text string) (schedule.Schedule, error) {
		s, err := schedule.Parse(text)
		if err != nil {
			return s, fmt.Errorf("job %s: stored schedule %q: %w", j.ref(), text, err)
		}
		return s.In(loc).AnchoredAt(anchor), nil
	}
	if start != nil {
		s, err := parse(*start)
		if err != nil {
			return err
		}
		j.start = &s
	}
	j.every = j.every[:0]
	for _, text := range every {
		s, err := parse(text)
		if err != nil {
			return err
		}
		j.every = append(j.every, s)
	}
	return nil
}

// ref names the job in the agent's log lines: its name and its owner's, each quoted as a
// PostgreSQL identifier ("Backup" of "alice"), so that a role's name holding spaces, "done" or
// "failed:", or a blank that prints as nothing, cannot pass for another role's job there.
func (j *job) ref() string { return jobRef(j.name, j.owner) }

// jobRef is job.ref for a job known by its name and owner.
func jobRef(name, owner string) string {
	return pgx.Identifier{name}.Sanitize() + " of " + pgx.Identifier{owner}.Sanitize()
}
