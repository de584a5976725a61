package task

import (
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// maxBackoff bounds the delay before a retry, however many attempts came before.
const maxBackoff = 100 * 365 * 24 * time.Hour

// add returns t plus k times the interval iv, as PostgreSQL adds intervals: months, then days (in
// the zone loc, so a day across a DST change is a calendar day), then the rest.
func add(t time.Time, iv pgtype.Interval, k int64, loc *time.Location) time.Time {
	t = t.In(loc)
	if iv.Months != 0 {
		// A day past the end of the month it lands in is that month's last day, as PostgreSQL has it
		// (January 31 plus a month is February 28), where time.AddDate would go on into March.
		y, m, d := t.Date()
		first := time.Date(y, m, 1, t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), loc).AddDate(0, int(int64(iv.Months)*k), 0)
		last := time.Date(first.Year(), first.Month()+1, 0, 0, 0, 0, 0, loc).Day()
		t = first.AddDate(0, 0, min(d, last)-1)
	}
	if iv.Days != 0 {
		t = t.AddDate(0, 0, int(int64(iv.Days)*k))
	}
	return t.Add(time.Duration(iv.Microseconds*k) * time.Microsecond)
}

// NextOnGrid returns the first instant plan + k·every (k >= 1) strictly after now: the next plan of
// a repeating task that does not drift, the missed periods skipped. every must be positive.
func NextOnGrid(plan time.Time, every pgtype.Interval, now time.Time, loc *time.Location) time.Time {
	if iv := add(plan, every, 1, loc); iv.After(now) {
		return iv
	}
	// The smallest k with plan + k·every > now: double hi until it is past now, then bisect.
	lo, hi := int64(1), int64(2)
	for !add(plan, every, hi, loc).After(now) {
		if hi > 1<<40 { // an interval that does not move forward: months and days that cancel out
			return now.Add(time.Second)
		}
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if add(plan, every, mid, loc).After(now) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return add(plan, every, hi, loc)
}

// NextPlan returns the next plan of a task that repeats every period: on the grid of its plan
// strictly after now (drift false), or the end of its run plus the period (drift true). It also
// spaces the tasks of a negative-max group, the period being the pause.
func NextPlan(plan time.Time, every pgtype.Interval, drift bool, stop, now time.Time, loc *time.Location) time.Time {
	if drift {
		return add(stop, every, 1, loc)
	}
	return NextOnGrid(plan, every, now, loc)
}

// RetryAt returns when a task whose attempt failed runs again: retry_delay · 2^(attempt-1) after
// now, at most maxBackoff.
func RetryAt(now time.Time, delay time.Duration, attempt int) time.Time {
	d := delay
	for i := 1; i < attempt && d < maxBackoff; i++ {
		d *= 2
	}
	return now.Add(min(d, maxBackoff))
}
