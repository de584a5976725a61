package schedule

import "time"

// Next returns the first fire time strictly after `after`, in the schedule's location, and false
// when the schedule never fires again (a one-off date in the past).
//
// Date and weekly schedules that name an hour fire once per matching local date, at the first
// instant at which the local wall clock reads the scheduled time or later: a time skipped by a
// daylight-saving jump fires at the jump, a repeated time fires once, at its first occurrence.
// 'D nn' and 'W nn' fire at every real instant whose local minute is nn. Interval schedules
// fire at Anchor + k × interval, k >= 1, in real time; daylight saving does not move them.
//
// Next computes the answer arithmetically; it never scans minute by minute.
func (s *Schedule) Next(after time.Time) (time.Time, bool) {
	loc := s.Location
	if loc == nil {
		loc = time.Local
	}
	switch {
	case s.Type == Interval:
		return s.nextInterval(after).In(loc), true
	case !s.Has(Hour):
		return time.Unix(nextAtMinute(after.Unix()+1, s.Minute, loc), 0).In(loc), true
	}
	return s.nextOnDate(after, loc)
}

// maxDateCandidates bounds the dates nextOnDate tries; two or three are ever needed.
const maxDateCandidates = 8

// nextOnDate handles date and weekly schedules that name an hour.
func (s *Schedule) nextOnDate(after time.Time, loc *time.Location) (time.Time, bool) {
	afterSec := after.Unix()
	y, m, d := after.In(loc).Date()
	// A date before the local date of `after` fires no later than `after`: its time has been read
	// on the wall clock by then. So the first candidate is that local date.
	from := daysFromCivil(int64(y), int64(m), int64(d))
	for range maxDateCandidates {
		day, ok := s.nextDate(from)
		if !ok {
			return time.Time{}, false
		}
		fire := firstReaching(day*secondsPerDay+int64(s.Hour)*3600+int64(s.Minute)*60, loc)
		if fire > afterSec {
			return time.Unix(fire, 0).In(loc), true
		}
		from = day + 1
	}
	return time.Time{}, false
}

const secondsPerDay = 86400

// nextDate returns the first date on or after day `from` (days since 1970-01-01) that the
// schedule matches, and false when there is none.
func (s *Schedule) nextDate(from int64) (int64, bool) {
	y, m, _ := civilFromDays(from)
	switch {
	case s.Type == Weekly && s.Has(Day):
		return from + mod(int64(s.Day)-weekday(from), 7), true
	case s.Type == Weekly || !s.Has(Day):
		return from, true
	case s.Has(Year):
		day, ok := s.dayIn(int64(s.Year), int64(s.Month))
		return day, ok && day >= from
	case s.Has(Month):
		// A month and day recur at least every eight years (29 February across a century).
		for year := y; year <= y+8; year++ {
			if day, ok := s.dayIn(year, int64(s.Month)); ok && day >= from {
				return day, true
			}
		}
		return 0, false
	}
	// A day of the month: a 31st recurs at least every two months.
	for range 13 {
		if day, ok := s.dayIn(y, m); ok && day >= from {
			return day, true
		}
		if m++; m > 12 {
			y, m = y+1, 1
		}
	}
	return 0, false
}

// dayIn returns the schedule's day in the given month as days since 1970-01-01, and false when
// that month has no such day.
func (s *Schedule) dayIn(year, month int64) (int64, bool) {
	last := int64(daysIn(int(year), int(month)))
	dom := int64(s.Day)
	if dom < 0 {
		dom = last + 1 + dom
	}
	if dom > last {
		return 0, false
	}
	return daysFromCivil(year, month, dom), true
}

// firstReaching returns the first instant (Unix seconds) at which the wall clock of loc reads
// wall (seconds since 1970-01-01 on the local clock) or later.
func firstReaching(wall int64, loc *time.Location) int64 {
	// No zone is 27 hours ahead of UTC, so the clock reads less than wall at this instant.
	t := wall - 27*3600
	for range 16 {
		inst := time.Unix(t, 0).In(loc)
		_, offset := inst.Zone()
		_, end := inst.ZoneBounds()
		fire := max(wall-int64(offset), t)
		if end.IsZero() || fire < end.Unix() {
			return fire
		}
		t = end.Unix() // the clock of the next zone period may already read wall at its start
	}
	return t
}

// nextAtMinute returns the first whole second at or after lo (Unix seconds) at which the wall
// clock of loc reads minute `minute` and second 0.
func nextAtMinute(lo int64, minute int, loc *time.Location) int64 {
	t := lo
	for range 16 {
		inst := time.Unix(t, 0).In(loc)
		_, offset := inst.Zone()
		_, end := inst.ZoneBounds()
		fire := t + mod(int64(minute)*60-int64(offset)-t, 3600)
		if end.IsZero() || fire < end.Unix() {
			return fire
		}
		t = end.Unix()
	}
	return t
}

// nextInterval returns Anchor + k × interval for the smallest k >= 1 after `after`.
func (s *Schedule) nextInterval(after time.Time) time.Time {
	anchor := s.Anchor
	if anchor.IsZero() {
		anchor = after
	}
	step := s.intervalSeconds()
	// Whole seconds compare exactly: anchor + k·step > after ⟺ k·step > after - anchor in
	// whole seconds, the fraction of a second of the anchor being kept on both sides.
	anchorSec := anchor.Unix()
	diff := after.Unix() - anchorSec
	if after.Nanosecond() < anchor.Nanosecond() {
		diff--
	}
	k := int64(1)
	switch {
	case diff < step:
	case diff < 1<<32: // step < diff too: a 32-bit division is several times faster
		k = int64(uint32(diff)/uint32(step)) + 1
	default:
		k = diff/step + 1
	}
	return time.Unix(anchorSec+k*step, int64(anchor.Nanosecond()))
}

// daysIn returns the number of days of a month (1..12) in a year.
func daysIn(year, month int) int {
	if month == 2 && isLeap(year) {
		return 29
	}
	return maxDays[month] - boolInt(month == 2)
}

func isLeap(year int) bool { return year%4 == 0 && (year%100 != 0 || year%400 == 0) }

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// weekday returns 0 (Sunday) to 6 (Saturday) for days since 1970-01-01, a Thursday.
func weekday(days int64) int64 { return mod(days+4, 7) }

// daysFromCivil returns the days since 1970-01-01 of a proleptic Gregorian date
// (Howard Hinnant's days_from_civil).
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// civilFromDays is the inverse of daysFromCivil.
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	m = mp + 3
	if m > 12 {
		m -= 12
	}
	y = yoe + era*400
	if m <= 2 {
		y++
	}
	return y, m, d
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if r := a - q*b; r != 0 && (r < 0) != (b < 0) {
		q--
	}
	return q
}

func mod(a, b int64) int64 { return a - floorDiv(a, b)*b }
