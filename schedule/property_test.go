package schedule_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/schedule"
)

// propertyZones are zones whose offsets are whole minutes in the years the property test uses,
// with daylight saving of one hour, of 30 minutes, at midnight, and a skipped day.
var propertyZones = []string{
	"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Sao_Paulo",
	"Asia/Kolkata", "Asia/Kathmandu", "Pacific/Chatham", "America/St_Johns", "Pacific/Apia",
}

// referenceHorizon is how far the reference implementation looks ahead.
const referenceHorizon = 70 * 24 * time.Hour

// TestNextAgreesWithReference checks Next against referenceNext over random schedules, zones and
// instants, half of them within days of a daylight-saving transition.
func TestNextAgreesWithReference(t *testing.T) {
	t.Parallel()
	cases := 500
	if testing.Short() {
		cases = 100
	}
	zones := make([]*time.Location, len(propertyZones))
	for i, name := range propertyZones {
		zones[i] = mustZone(t, name)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2026))
	for range cases {
		loc := zones[rng.IntN(len(zones))]
		after, clockChange := randomInstant(rng, loc)
		s := randomSchedule(rng, after.In(loc), clockChange).In(loc).AnchoredAt(after.Add(-time.Duration(rng.Int64N(int64(10 * 24 * time.Hour)))))
		got, ok := s.Next(after)
		want, wantOK := referenceNext(s, after)
		switch {
		case !wantOK && ok && got.Sub(after) <= referenceHorizon:
			t.Fatalf("seed %d: %q in %s after %s: Next = %s, reference finds none", seed, s, loc, after.In(loc).Format(layout), got.Format(layout))
		case wantOK && (!ok || !got.Equal(want) || got.Format(layout) != want.Format(layout)):
			t.Fatalf("seed %d: %q in %s after %s: Next = %s %v, reference %s", seed, s, loc, after.In(loc).Format(layout), got.Format(layout), ok, want.Format(layout))
		}
	}
}

// randomInstant returns an instant in 2010..2035, half the time within days of a zone
// transition, and the local hours just before and after that transition (or a random hour).
func randomInstant(rng *rand.Rand, loc *time.Location) (time.Time, [2]int) {
	lo := time.Date(2010, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	t := time.Unix(lo+rng.Int64N(hi-lo), 0)
	clockChange := [2]int{rng.IntN(24), rng.IntN(24)}
	if rng.IntN(2) == 0 {
		if _, end := t.In(loc).ZoneBounds(); !end.IsZero() {
			t = end.Add(time.Duration(rng.Int64N(int64(48*time.Hour))) - 36*time.Hour)
			clockChange = [2]int{end.Add(-time.Second).In(loc).Hour(), end.In(loc).Hour()}
		}
	}
	switch rng.IntN(3) {
	case 0:
		t = t.Truncate(time.Minute) // exactly on a minute
	case 1:
		t = t.Add(time.Duration(rng.Int64N(int64(time.Second))))
	}
	return t, clockChange
}

// randomSchedule writes a random schedule that fires within about two months of near (most of
// the time), often in the hours around a clock change, and parses it.
func randomSchedule(rng *rand.Rand, near time.Time, clockChange [2]int) schedule.Schedule {
	for {
		hour := rng.IntN(24)
		if rng.IntN(3) != 0 {
			span := (clockChange[1] - clockChange[0] + 24) % 24 // a skipped hour lies between
			hour = (clockChange[0] + rng.IntN(min(span, 3)+1)) % 24
		}
		clock := fmt.Sprintf("%d:%02d", hour, rng.IntN(60))
		if rng.IntN(2) == 0 {
			clock = fmt.Sprintf("%d:%02d", hour, 15*rng.IntN(4))
		}
		day := rng.IntN(31) + 1
		if rng.IntN(3) == 0 {
			day = -rng.IntN(28) - 1
		}
		month := int(near.Month()) + rng.IntN(2)
		if month > 12 {
			month = 1
		}
		year := near.Year() - rng.IntN(6)/5 // now and then a year in the past
		var text string
		switch rng.IntN(9) {
		case 0:
			text = fmt.Sprintf("D %02d", rng.IntN(60))
		case 1:
			text = "D " + clock
		case 2:
			text = fmt.Sprintf("D %d %s", day, clock)
		case 3:
			text = fmt.Sprintf("D %02d.%02d %s", month, day, clock)
		case 4:
			text = fmt.Sprintf("D %04d.%02d.%02d %s", year, month, day, clock)
		case 5:
			text = fmt.Sprintf("W %d %s", rng.IntN(8), clock)
		case 6:
			text = "W " + clock
		case 7:
			text = fmt.Sprintf("W %02d", rng.IntN(60))
		default:
			text = fmt.Sprintf("I %d %d:%02d", rng.IntN(3)+1, rng.IntN(24), rng.IntN(60))
			if rng.IntN(2) == 0 {
				text = fmt.Sprintf("I %d:%02d", rng.IntN(5), rng.IntN(60))
			}
		}
		if s, err := schedule.Parse(text); err == nil {
			return s
		}
	}
}

// referenceNext is the straightforward implementation of the rules: it walks the clock one
// minute at a time. It needs zones whose offsets and transitions fall on whole minutes.
func referenceNext(s schedule.Schedule, after time.Time) (time.Time, bool) {
	loc := s.Location
	if s.Type == schedule.Interval {
		step := time.Duration(s.Minute) * time.Minute
		if s.Has(schedule.Hour) {
			step += time.Duration(s.Hour) * time.Hour
		}
		if s.Has(schedule.Day) {
			step += time.Duration(s.Day) * 24 * time.Hour
		}
		t := s.Anchor.Add(step)
		for !t.After(after) {
			t = t.Add(step)
		}
		return t.In(loc), true
	}
	first := after.Truncate(time.Minute)
	end := after.Add(referenceHorizon)
	if !s.Has(schedule.Hour) {
		// Every real minute whose local minute matches.
		for t := first; !t.After(end); t = t.Add(time.Minute) {
			if t.After(after) && t.In(loc).Minute() == s.Minute {
				return t.In(loc), true
			}
		}
		return time.Time{}, false
	}
	// Each local date's time fires when the wall clock first reads it or later: walk the real
	// minutes and fire whenever the highest wall-clock minute seen so far passes a matching one.
	t := first.Add(-48 * time.Hour)
	highest := wallMinute(t, loc)
	for ; !t.After(end); t = t.Add(time.Minute) {
		for wall := wallMinute(t, loc); highest < wall; {
			highest++
			if matchesWallMinute(s, highest) && t.After(after) {
				return t.In(loc), true
			}
		}
	}
	return time.Time{}, false
}

// wallMinute returns the minutes since 1970-01-01 00:00 that the wall clock of loc reads at t.
func wallMinute(t time.Time, loc *time.Location) int64 {
	_, offset := t.In(loc).Zone()
	return (t.Unix() + int64(offset)) / 60
}

// matchesWallMinute reports whether a wall-clock minute is one the schedule names.
func matchesWallMinute(s schedule.Schedule, wall int64) bool {
	tm := time.Unix(wall*60, 0).UTC()
	if tm.Minute() != s.Minute || tm.Hour() != s.Hour {
		return false
	}
	if s.Type == schedule.Weekly {
		return !s.Has(schedule.Day) || int(tm.Weekday()) == s.Day%7
	}
	if s.Has(schedule.Year) && tm.Year() != s.Year {
		return false
	}
	if s.Has(schedule.Month) && int(tm.Month()) != s.Month {
		return false
	}
	if s.Has(schedule.Day) {
		day := s.Day
		if day < 0 {
			lastDay := time.Date(tm.Year(), tm.Month()+1, 0, 0, 0, 0, 0, time.UTC).Day()
			day = lastDay + 1 + day
		}
		return tm.Day() == day
	}
	return true
}
