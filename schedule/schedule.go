// Package schedule parses the pgjobs schedule language (D, W and I schedules) and computes fire times.
package schedule

import (
	"strconv"
	"strings"
	"time"
)

// Type is the kind of a schedule: Date, Weekly or Interval.
type Type byte

// The schedule types, named by their letter in the schedule language.
const (
	Date     Type = 'D'
	Weekly   Type = 'W'
	Interval Type = 'I'
)

// String returns the type's letter.
func (t Type) String() string { return string(rune(t)) }

// Field names one field of a schedule, from the finest (Minute) to the coarsest (Year).
type Field int

// The fields of a schedule. A schedule that gives a field gives every finer one too.
const (
	Minute Field = iota + 1
	Hour
	Day
	Month
	Year
)

// Schedule is a parsed schedule. Only the fields up to Given are meaningful; the others are zero.
type Schedule struct {
	// Type is the schedule's kind.
	Type Type
	// Given is the coarsest field written in the schedule; every finer field is written too.
	// Date schedules go up to Year, weekly and interval schedules up to Day.
	Given Field
	// Year is the year of a one-off date schedule (Given == Year).
	Year int
	// Month is the month 1..12 of a date schedule (Given >= Month).
	Month int
	// Day depends on Type (Given >= Day): for Date the day of the month, 1..31, or -1..-28 counted
	// from the month's end (-1 is the last day); for Weekly the weekday 0..7, 0 and 7 being Sunday;
	// for Interval the number of days, 1 or more.
	Day int
	// Hour is the hour 0..23 (Given >= Hour); for Interval the hours of the interval.
	Hour int
	// Minute is the minute 0..59; for Interval the minutes of the interval.
	Minute int

	// Location is the zone the schedule's wall-clock times are read in; nil means time.Local.
	Location *time.Location
	// Anchor is the instant an interval schedule counts from (the agent's start); the zero
	// time means the instant Next is asked from. Date and weekly schedules ignore it.
	Anchor time.Time
}

// Has reports whether the schedule gives field f.
func (s Schedule) Has(f Field) bool { return s.Given >= f }

// In returns a copy of s whose wall-clock times are read in loc.
func (s Schedule) In(loc *time.Location) Schedule {
	s.Location = loc
	return s
}

// AnchoredAt returns a copy of s whose interval counts from start.
func (s Schedule) AnchoredAt(start time.Time) Schedule {
	s.Anchor = start
	return s
}

// IsOneOff reports whether the schedule names a single date (a date schedule with a year).
func (s Schedule) IsOneOff() bool { return s.Type == Date && s.Given == Year }

// intervalSeconds returns the length of an interval schedule in seconds; 0 for other types.
// Fields that are not given are zero.
func (s *Schedule) intervalSeconds() int64 {
	if s.Type != Interval {
		return 0
	}
	return int64(s.Day)*86400 + int64(s.Hour)*3600 + int64(s.Minute)*60
}

// String returns the canonical text of the schedule: the type letter in upper case, a four-digit
// year, two-digit month, and a day after a month as two digits, hours without padding, two-digit
// minutes; for example "D 2003.12.01 17:30", "D 12.01 17:30", "D -1 17:30", "W 1 7:30", "I 0:05".
// Parse(s.String()) gives s back, less Location and Anchor.
func (s Schedule) String() string {
	var b strings.Builder
	b.Grow(20)
	b.WriteByte(byte(s.Type))
	b.WriteByte(' ')
	if s.Has(Year) {
		writePadded(&b, s.Year, 4)
		b.WriteByte('.')
	}
	if s.Has(Month) {
		writePadded(&b, s.Month, 2)
		b.WriteByte('.')
	}
	if s.Has(Day) {
		if s.Has(Month) {
			writePadded(&b, s.Day, 2)
		} else {
			b.WriteString(strconv.Itoa(s.Day))
		}
		b.WriteByte(' ')
	}
	if s.Has(Hour) {
		b.WriteString(strconv.Itoa(s.Hour))
		b.WriteByte(':')
	}
	writePadded(&b, s.Minute, 2)
	return b.String()
}

// writePadded writes n with at least width digits; a negative n keeps its sign and is not padded.
func writePadded(b *strings.Builder, n, width int) {
	text := strconv.Itoa(n)
	if n >= 0 {
		for i := len(text); i < width; i++ {
			b.WriteByte('0')
		}
	}
	b.WriteString(text)
}
