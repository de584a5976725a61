package task

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

func TestNextPlan(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip(err)
	}
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04:05", s, paris)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	minutes := func(n int64) pgtype.Interval { return pgtype.Interval{Microseconds: n * 60e6, Valid: true} }
	days := func(n int32) pgtype.Interval { return pgtype.Interval{Days: n, Valid: true} }
	months := func(n int32) pgtype.Interval { return pgtype.Interval{Months: n, Valid: true} }
	for _, c := range []struct {
		name            string
		plan            string
		every           pgtype.Interval
		drift           bool
		stop, now, want string
	}{
		{"next period", "2026-11-25 10:00:00", minutes(5), false, "2026-11-25 10:00:01", "2026-11-25 10:00:01", "2026-11-25 10:05:00"},
		{"missed periods skipped", "2026-11-25 10:00:00", minutes(5), false, "2026-11-25 10:17:00", "2026-11-25 10:17:00", "2026-11-25 10:20:00"},
		{"strictly after now", "2026-11-25 10:00:00", minutes(5), false, "2026-11-25 10:05:00", "2026-11-25 10:05:00", "2026-11-25 10:10:00"},
		{"drift from the end", "2026-11-25 10:00:00", minutes(5), true, "2026-11-25 10:17:30", "2026-11-25 10:17:31", "2026-11-25 10:22:30"},
		{"a day across DST", "2026-03-28 12:00:00", days(1), false, "2026-03-28 12:01:00", "2026-03-28 12:01:00", "2026-03-29 12:00:00"},
		{"end of month", "2026-01-31 08:00:00", months(1), false, "2026-01-31 08:00:01", "2026-01-31 08:00:01", "2026-02-28 08:00:00"},
		{"months skipped", "2026-01-31 08:00:00", months(1), false, "2026-05-02 00:00:00", "2026-05-02 00:00:00", "2026-05-31 08:00:00"},
		{"from the first plan, not the clamped one", "2024-01-31 12:00:00", months(1), false, "2024-02-29 12:00:01", "2024-02-29 12:00:01", "2024-03-31 12:00:00"},
		{"years of seconds", "2025-11-25 10:00:00", pgtype.Interval{Microseconds: 1e6, Valid: true}, false, "2026-11-25 10:00:00", "2026-11-25 10:00:00", "2026-11-25 10:00:01"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := NextPlan(at(c.plan), c.every, c.drift, at(c.stop), at(c.now), paris)
			if !got.Equal(at(c.want)) {
				t.Errorf("got %s, want %s", got, c.want)
			}
		})
	}
	// An interval whose months and days cancel out never moves forward: no endless search.
	now := at("2026-11-25 10:00:00")
	if got := NextOnGrid(now.Add(-time.Hour), pgtype.Interval{Months: 1, Days: -30, Valid: true}, now, paris); !got.After(now) {
		t.Errorf("an interval that does not move: %s", got)
	}
}

func TestRetryAt(t *testing.T) {
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		delay   time.Duration
		attempt int
		want    time.Duration
	}{
		{10 * time.Second, 1, 10 * time.Second},
		{10 * time.Second, 2, 20 * time.Second},
		{10 * time.Second, 4, 80 * time.Second},
		{0, 3, 0},
		{time.Hour, 1000, maxBackoff},
	} {
		if got := RetryAt(now, c.delay, c.attempt).Sub(now); got != c.want {
			t.Errorf("RetryAt(%s, attempt %d) = +%s, want +%s", c.delay, c.attempt, got, c.want)
		}
	}
}
