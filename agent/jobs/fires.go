package jobs

import (
	"time"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// NextFires returns the first n fires of a stored job strictly after `after`, in order, as the
// agent plans them: the job is built as the planner builds it, its schedules read in loc and its
// interval schedules counting from anchor (the agent's start, or its takeover), and each fire is
// the planner's next fire after the one before. Nothing fires before the start schedule first
// fires after s.StartSet; a job with a start schedule and no recurrence fires once, then; the
// recurrences are merged, a time two of them share counting once. It returns fewer than n fires
// when the job never fires again, none when n < 1, and an error when a stored schedule does not
// parse. The job's NextRun, LastFire and Resumed are not looked at: the fires are its schedules'.
func NextFires(s sqlschema.StoredJob, loc *time.Location, anchor, after time.Time, n int) ([]time.Time, error) {
	j, err := storedJob(s, loc, anchor)
	if err != nil {
		return nil, err
	}
	var fires []time.Time
	for len(fires) < n {
		next, ok := j.nextFire(after)
		if !ok {
			break
		}
		fires = append(fires, next)
		after = next
	}
	return fires, nil
}
