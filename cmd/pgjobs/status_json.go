package main

import (
	"errors"
	"strings"
	"time"
)

// statusJSON is one database as pgjobs status --json prints it. Its field names are stable.
type statusJSON struct {
	ID            int            `json:"id"`
	Target        string         `json:"target"` // host:port/database
	User          string         `json:"user"`
	Reachable     bool           `json:"reachable"`
	Error         *string        `json:"error"` // why it is unreachable or unreadable
	Enabled       bool           `json:"enabled"`
	SchemaVersion *int           `json:"schema_version"`
	SchemaNote    *string        `json:"schema_note"` // what to do about a schema of another version
	Role          *string        `json:"role"`
	Superuser     *bool          `json:"superuser"`
	CheckedAt     *time.Time     `json:"checked_at"` // the server's clock, which the ages count from
	Agent         *agentJSON     `json:"agent"`
	Standbys      *int           `json:"standbys"` // null when unknown (standbys_note says why)
	StandbysNote  *string        `json:"standbys_note"`
	Jobs          *int           `json:"jobs"` // null, as all that follows, when the database was not read
	PausedJobs    *int           `json:"paused_jobs"`
	NextFire      *eventJSON     `json:"next_fire"`
	Runs24h       map[string]int `json:"runs_24h"` // ok, error, cancelled, abandoned, skipped, missed
	Running       *int           `json:"running"`
	Failures24h   *int           `json:"failures_24h"`
	Failures1h    *int           `json:"failures_1h"`
	LastFailure   *failureJSON   `json:"last_failure"`
	Tasks         map[string]int `json:"tasks"` // by state, lower case; null before schema version 5
	TasksWaiting  *int           `json:"tasks_waiting"`
	OldestWaiting *eventJSON     `json:"oldest_waiting_task"` // its plan and age
	Problems      []string       `json:"problems"`            // the reasons for exit 1; empty when well
}

type agentJSON struct {
	State  string     `json:"state"` // active, none or unknown
	Name   *string    `json:"name"`  // the agent that took the lease last
	PID    *int       `json:"pid"`   // the leader session, while it holds the lease
	Since  *time.Time `json:"since"` // when Name took the lease
	AgeSec *float64   `json:"since_seconds"`
	Note   string     `json:"note"` // the text pgjobs status prints
}

type eventJSON struct {
	Job    *string   `json:"job,omitempty"`
	Owner  *string   `json:"owner,omitempty"` // the job's
	At     time.Time `json:"at"`
	AgeSec float64   `json:"age_seconds"` // negative when At lies ahead
}

type failureJSON struct {
	Job      string     `json:"job"`
	Owner    string     `json:"owner"`
	Status   string     `json:"status"`
	Finished *time.Time `json:"finished"`
	AgeSec   *float64   `json:"age_seconds"`
	SQLState *string    `json:"sqlstate"`
	Message  *string    `json:"message"`
}

// statusDocument returns what pgjobs status --json prints.
func statusDocument(statuses []dbStatus) []statusJSON {
	out := make([]statusJSON, 0, len(statuses))
	for _, d := range statuses {
		s := d.status
		j := statusJSON{ID: d.row.ID, Target: d.row.Target(), User: d.row.ResolvedUser(), Reachable: d.unreachable == nil,
			Enabled: s.Enabled, Problems: append([]string{}, d.problems()...)}
		if err := errors.Join(d.unreachable, d.unreadable); err != nil {
			text := oneLine(err)
			j.Error = &text
		}
		if j.Error != nil || !s.Enabled {
			out = append(out, j)
			continue
		}
		age := func(t time.Time) float64 { return s.Now.Sub(t).Seconds() }
		j.SchemaVersion, j.Role, j.Superuser, j.CheckedAt = &s.Version, &s.Role, &s.Superuser, &s.Now
		if note := versionNote(s.Version, ""); note != "" {
			j.SchemaNote = &note
		}
		l := s.Leader
		j.Agent = &agentJSON{State: "none", Name: l.Agent, Since: l.Since, Note: leaderText(s)}
		switch {
		case !l.Readable || !l.Tracked:
			j.Agent.State = "unknown"
		case l.Active:
			j.Agent.State, j.Agent.PID = "active", l.PID
		}
		if l.Since != nil {
			a := age(*l.Since)
			j.Agent.AgeSec = &a
		}
		if s.Standbys.Hidden == 0 {
			j.Standbys = &s.Standbys.Count
		} else {
			note := standbysText(s)
			j.StandbysNote = &note
		}
		j.Jobs, j.PausedJobs = &s.Jobs, &s.PausedJobs
		if s.NextFire != nil {
			j.NextFire = &eventJSON{Job: s.NextJob, Owner: s.NextOwner, At: *s.NextFire, AgeSec: age(*s.NextFire)}
		}
		r := s.Runs
		j.Runs24h = map[string]int{"ok": r.OK, "error": r.Error, "cancelled": r.Cancelled, "abandoned": r.Abandoned, "skipped": r.Skipped, "missed": r.Missed}
		failures := r.Failures()
		j.Running, j.Failures24h, j.Failures1h = &r.Running, &failures, &r.FailuresLastHour
		if f := s.LastFailure; f != nil {
			j.LastFailure = &failureJSON{Job: f.Job, Owner: f.Owner, Status: f.Status, Finished: f.Finished, SQLState: f.SQLState, Message: f.Message}
			if f.Finished != nil {
				a := age(*f.Finished)
				j.LastFailure.AgeSec = &a
			}
		}
		if t := s.Tasks; t != nil {
			j.Tasks = map[string]int{}
			for state, n := range t.ByState {
				j.Tasks[strings.ToLower(state)] = n
			}
			j.TasksWaiting = &t.Waiting
			if t.OldestWaiting != nil {
				j.OldestWaiting = &eventJSON{At: *t.OldestWaiting, AgeSec: age(*t.OldestWaiting)}
			}
		}
		out = append(out, j)
	}
	return out
}
