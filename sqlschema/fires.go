package sqlschema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// JobFires is one job as the connected role may read it, with what planning its fires needs.
type JobFires struct {
	// Job is the job as far as pgj_jobs shows it. ID, OwnerID, LastFire and Resumed are zero.
	// StartSet is when the job was created, as no role may read when its start schedule was last
	// set: it is no later than that, so the start schedule gates no fire after NextRun, which the
	// agent (or pgj_jobs) planned with the real one. NextRun is the next run pgj_jobs shows: the
	// active agent's plan, else the last plan while it lies ahead, else the one an agent starting
	// now would make; nil while the job is paused and when it never fires again.
	Job    StoredJob
	Paused bool
	// Zone is the IANA zone the agent recorded that it reads schedules in; "" when none did or the
	// role may not read it (only superusers and the roles granted SELECT on pgj_leader_ may).
	Zone string
}

// JobNotFoundError means the connected role sees no job of that name in the database: there is
// none, or it is another role's.
type JobNotFoundError struct {
	Job, Database string
}

func (e *JobNotFoundError) Error() string {
	return fmt.Sprintf("job %q not found in database %q", e.Job, e.Database)
}

// JobFiresLoad reads job name as the connected role sees it, through the views every role may
// read, in a transaction whose TimeZone is zone (an IANA name; "" keeps the session's),
// the zone pgj_jobs computes a next run in when no agent recorded one. It returns a
// *JobNotFoundError when the role sees no job of that name.
func JobFiresLoad(ctx context.Context, db DB, name, zone string) (JobFires, error) {
	var out JobFires
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if zone != "" {
			if _, err := tx.Exec(ctx, query("session_timezone"), zone); err != nil {
				return fmt.Errorf("set the time zone %s: %w", zone, err)
			}
		}
		var (
			database             string
			zoneReadable, found  bool
			jobName, call, owner *string
			startName, startText *string
			startup, paused      *bool
			created              *time.Time
		)
		j := &out.Job
		if err := tx.QueryRow(ctx, query("job_fires"), name).Scan(&database, &zoneReadable, &found, &jobName, &call, &owner,
			&startup, &created, &j.NextRun, &startName, &startText, &j.Schedules, &paused, &j.Timeout); err != nil {
			return fmt.Errorf("read job %q: %w", name, err)
		}
		if !found {
			return &JobNotFoundError{Job: name, Database: database}
		}
		if startName != nil && startText == nil {
			return fmt.Errorf("job %q: its start schedule %q is another role's, which this role may not read", name, *startName)
		}
		j.Name, j.Call, j.Owner, j.OwnerWas = *jobName, *call, owner, *owner
		j.Startup, j.StartSet, j.StartSchedule = *startup, *created, startText
		out.Paused = *paused
		if !zoneReadable {
			return nil
		}
		var recorded *string
		if err := tx.QueryRow(ctx, query("leader_zone")).Scan(&recorded); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read the agent's time zone: %w", err)
		}
		if recorded != nil {
			out.Zone = *recorded
		}
		return nil
	})
	if err != nil {
		return JobFires{}, err
	}
	return out, nil
}
