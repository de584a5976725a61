package schedule_test

import (
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // the same zone rules on every machine

	"github.com/pgjobs/pgjobs/schedule"
)

const layout = "2006-01-02T15:04:05-07:00"

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func mustTime(t testing.TB, text string) time.Time {
	t.Helper()
	tm, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

// fireTimes returns up to n fire times after `from`, formatted as pgjobs next prints them.
func fireTimes(s schedule.Schedule, from time.Time, n int) []string {
	var out []string
	for range n {
		next, ok := s.Next(from)
		if !ok {
			break
		}
		out = append(out, next.Format(layout))
		from = next
	}
	return out
}

func TestNext(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		schedule string
		zone     string
		from     string
		start    string // interval anchor; "" means from
		want     string // fire times separated by spaces; "" means never
	}{
		// Europe/Berlin 2026: 02:00 CET jumps to 03:00 CEST on 29 March, 03:00 CEST falls back to 02:00 CET on 25 October.
		{"skipped time fires at the jump", "D 2:30", "Europe/Berlin", "2026-03-28T12:00:00+01:00", "",
			"2026-03-29T03:00:00+02:00 2026-03-30T02:30:00+02:00"},
		{"skipped whole hour fires at the jump", "D 2:00", "Europe/Berlin", "2026-03-29T00:00:00+01:00", "",
			"2026-03-29T03:00:00+02:00 2026-03-30T02:00:00+02:00"},
		{"time just after the jump", "D 3:00", "Europe/Berlin", "2026-03-29T00:00:00+01:00", "",
			"2026-03-29T03:00:00+02:00 2026-03-30T03:00:00+02:00"},
		{"repeated time fires once, first", "D 2:30", "Europe/Berlin", "2026-10-24T12:00:00+02:00", "",
			"2026-10-25T02:30:00+02:00 2026-10-26T02:30:00+01:00"},
		{"asked during the repeat", "D 2:30", "Europe/Berlin", "2026-10-25T02:10:00+01:00", "",
			"2026-10-26T02:30:00+01:00"},
		{"minute never in a skipped hour", "D 30", "Europe/Berlin", "2026-03-29T00:00:00+01:00", "",
			"2026-03-29T00:30:00+01:00 2026-03-29T01:30:00+01:00 2026-03-29T03:30:00+02:00"},
		{"minute twice in a repeated hour", "W 30", "Europe/Berlin", "2026-10-25T01:00:00+02:00", "",
			"2026-10-25T01:30:00+02:00 2026-10-25T02:30:00+02:00 2026-10-25T02:30:00+01:00 2026-10-25T03:30:00+01:00"},
		{"interval ignores daylight saving", "I 1:00", "Europe/Berlin", "2026-03-29T00:00:00+01:00", "",
			"2026-03-29T01:00:00+01:00 2026-03-29T03:00:00+02:00 2026-03-29T04:00:00+02:00"},
		{"interval of a day is 24 real hours", "I 1 0:00", "Europe/Berlin", "2026-03-28T12:00:00+01:00", "",
			"2026-03-29T13:00:00+02:00 2026-03-30T13:00:00+02:00"},

		// America/New_York 2026: 8 March 02:00 EST -> 03:00 EDT, 1 November 02:00 EDT -> 01:00 EST.
		{"New York repeated 1:30", "D 1:30", "America/New_York", "2026-10-31T12:00:00-04:00", "",
			"2026-11-01T01:30:00-04:00 2026-11-02T01:30:00-05:00"},
		{"New York Sunday 0 in the gap", "W 0 2:15", "America/New_York", "2026-03-07T00:00:00-05:00", "",
			"2026-03-08T03:00:00-04:00 2026-03-15T02:15:00-04:00"},
		{"New York Sunday 7 in the gap", "W 7 2:15", "America/New_York", "2026-03-07T00:00:00-05:00", "",
			"2026-03-08T03:00:00-04:00 2026-03-15T02:15:00-04:00"},

		// Australia/Lord_Howe: +10:30 standard, +11:00 summer; 02:00 -> 02:30 on 4 October 2026,
		// 02:00 -> 01:30 on 5 April 2026.
		{"Lord Howe half-hour gap", "D 2:15", "Australia/Lord_Howe", "2026-10-03T12:00:00+10:30", "",
			"2026-10-04T02:30:00+11:00 2026-10-05T02:15:00+11:00"},
		{"Lord Howe half-hour repeat", "D 1:45", "Australia/Lord_Howe", "2026-04-04T12:00:00+11:00", "",
			"2026-04-05T01:45:00+11:00 2026-04-06T01:45:00+10:30"},
		{"Lord Howe minute in the repeat", "D 45", "Australia/Lord_Howe", "2026-04-05T01:00:00+11:00", "",
			"2026-04-05T01:45:00+11:00 2026-04-05T01:45:00+10:30 2026-04-05T02:45:00+10:30"},
		{"Lord Howe minute in the gap", "D 15", "Australia/Lord_Howe", "2026-10-04T01:00:00+10:30", "",
			"2026-10-04T01:15:00+10:30 2026-10-04T03:15:00+11:00"},

		// America/Sao_Paulo 2018: midnight jumped to 01:00 on 4 November; on 18 February midnight
		// went back to 23:00 of the 17th.
		{"Sao Paulo midnight skipped", "D 0:00", "America/Sao_Paulo", "2018-11-03T12:00:00-03:00", "",
			"2018-11-04T01:00:00-02:00 2018-11-05T00:00:00-02:00"},
		{"Sao Paulo 0:30 skipped", "D 0:30", "America/Sao_Paulo", "2018-11-03T12:00:00-03:00", "",
			"2018-11-04T01:00:00-02:00 2018-11-05T00:30:00-02:00"},
		{"Sao Paulo Sunday midnight skipped", "W 0 0:00", "America/Sao_Paulo", "2018-11-01T00:00:00-03:00", "",
			"2018-11-04T01:00:00-02:00 2018-11-11T00:00:00-02:00"},
		{"Sao Paulo repeated 23:30 of the 17th", "D 23:30", "America/Sao_Paulo", "2018-02-17T12:00:00-02:00", "",
			"2018-02-17T23:30:00-02:00 2018-02-18T23:30:00-03:00"},
		{"Sao Paulo midnight after the repeat", "D 0:00", "America/Sao_Paulo", "2018-02-17T12:00:00-02:00", "",
			"2018-02-18T00:00:00-03:00 2018-02-19T00:00:00-03:00"},
		{"Sao Paulo minute in the repeated hour", "D 30", "America/Sao_Paulo", "2018-02-17T22:00:00-02:00", "",
			"2018-02-17T22:30:00-02:00 2018-02-17T23:30:00-02:00 2018-02-17T23:30:00-03:00 2018-02-18T00:30:00-03:00"},

		// Pacific/Apia skipped 30 December 2011 whole.
		{"Apia skipped day fires at the jump", "D 12:00", "Pacific/Apia", "2011-12-29T13:00:00-10:00", "",
			"2011-12-31T00:00:00+14:00 2011-12-31T12:00:00+14:00"},

		// Leap years and negative days.
		{"29 February from a non-leap year", "D 02.29 10:00", "UTC", "2026-01-01T00:00:00Z", "",
			"2028-02-29T10:00:00+00:00 2032-02-29T10:00:00+00:00"},
		{"29 February across 2100", "D 02.29 10:00", "UTC", "2096-03-01T00:00:00Z", "",
			"2104-02-29T10:00:00+00:00"},
		{"last day of each month", "D -1 17:30", "UTC", "2026-01-31T18:00:00Z", "",
			"2026-02-28T17:30:00+00:00 2026-03-31T17:30:00+00:00 2026-04-30T17:30:00+00:00"},
		{"last day of a leap February", "D -1 17:30", "UTC", "2028-02-01T00:00:00Z", "",
			"2028-02-29T17:30:00+00:00"},
		{"28th from the end", "D -28 0:00", "UTC", "2026-01-15T00:00:00Z", "",
			"2026-02-01T00:00:00+00:00 2026-03-04T00:00:00+00:00"},
		{"28th from the end of a leap February", "D -28 0:00", "UTC", "2028-01-15T00:00:00Z", "",
			"2028-02-02T00:00:00+00:00"},
		{"last day of February every year", "D 02.-1 10:00", "UTC", "2027-03-01T00:00:00Z", "",
			"2028-02-29T10:00:00+00:00 2029-02-28T10:00:00+00:00"},
		{"31st skips short months", "D 31 10:00", "UTC", "2026-01-31T11:00:00Z", "",
			"2026-03-31T10:00:00+00:00 2026-05-31T10:00:00+00:00"},
		{"yearly date", "D 12.01 17:30", "UTC", "2026-12-01T17:30:00Z", "",
			"2027-12-01T17:30:00+00:00"},

		// One-off dates.
		{"one-off in the past never fires", "D 2003.12.01 17:30", "Europe/Berlin", "2026-11-20T00:00:00+01:00", "", ""},
		{"one-off in the future fires once", "D 2003.12.01 17:30", "Europe/Berlin", "2003-11-30T00:00:00+01:00", "",
			"2003-12-01T17:30:00+01:00"},
		{"one-off is strictly after", "D 2024.02.29 10:00", "UTC", "2024-02-29T10:00:00Z", "", ""},
		{"one-off a moment before", "D 2024.02.29 10:00", "UTC", "2024-02-29T09:59:59.999Z", "",
			"2024-02-29T10:00:00+00:00"},

		// Weekly schedules; 20 November 2026 is a Friday.
		{"Sunday as 0", "W 0 12:00", "UTC", "2026-11-20T00:00:00Z", "", "2026-11-22T12:00:00+00:00 2026-11-29T12:00:00+00:00"},
		{"Sunday as 7", "W 7 12:00", "UTC", "2026-11-20T00:00:00Z", "", "2026-11-22T12:00:00+00:00 2026-11-29T12:00:00+00:00"},
		{"Monday", "W 1 7:30", "UTC", "2026-11-20T00:00:00Z", "", "2026-11-23T07:30:00+00:00"},
		{"today later", "W 5 12:00", "UTC", "2026-11-20T11:00:00Z", "", "2026-11-20T12:00:00+00:00"},
		{"today exactly is next week", "W 5 12:00", "UTC", "2026-11-20T12:00:00Z", "", "2026-11-27T12:00:00+00:00"},
		{"weekly without a day is daily", "W 12:00", "UTC", "2026-11-20T12:00:00Z", "", "2026-11-21T12:00:00+00:00"},

		// Minute schedules and fractions of a second.
		{"hourly", "D 05", "UTC", "2026-11-20T10:05:00.5Z", "", "2026-11-20T11:05:00+00:00 2026-11-20T12:05:00+00:00"},
		{"hourly just before", "D 05", "UTC", "2026-11-20T10:04:59.9Z", "", "2026-11-20T10:05:00+00:00"},
		{"hourly in a half-hour zone", "D 00", "Asia/Kolkata", "2026-11-20T10:00:00+05:30", "",
			"2026-11-20T11:00:00+05:30"},

		// Intervals anchored at the agent's start.
		{"interval from its anchor", "I 0:05", "UTC", "2026-11-20T10:00:00Z", "2026-11-20T10:00:00Z",
			"2026-11-20T10:05:00+00:00 2026-11-20T10:10:00+00:00"},
		{"interval between fires", "I 0:05", "UTC", "2026-11-20T10:07:30Z", "2026-11-20T10:00:00Z",
			"2026-11-20T10:10:00+00:00"},
		{"interval before its anchor", "I 0:05", "UTC", "2026-11-20T09:00:00Z", "2026-11-20T10:00:00Z",
			"2026-11-20T10:05:00+00:00"},
		{"interval keeps the anchor's seconds", "I 1", "UTC", "2026-11-20T10:00:30Z", "2026-11-20T10:00:10Z",
			"2026-11-20T10:01:10+00:00"},
		{"long interval", "I 2147483647 0:00", "UTC", "2026-11-20T00:00:00Z", "",
			"5881637-05-30T00:00:00+00:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			from := mustTime(t, tt.from)
			start := from
			if tt.start != "" {
				start = mustTime(t, tt.start)
			}
			s := schedule.MustParse(tt.schedule).In(mustZone(t, tt.zone)).AnchoredAt(start)
			want := strings.Fields(tt.want)
			got := fireTimes(s, from, max(len(want), 1))
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("%s from %s in %s:\n got %v\nwant %v", tt.schedule, tt.from, tt.zone, got, want)
			}
		})
	}
}

func TestNextUsesLocalWithoutLocation(t *testing.T) {
	t.Parallel()
	s := schedule.MustParse("D 17:30")
	next, ok := s.Next(time.Date(2026, 11, 20, 0, 0, 0, 0, time.Local))
	if !ok || next.Location() != time.Local || next.Hour() != 17 || next.Minute() != 30 {
		t.Fatalf("Next = %v, %v; want 17:30 local", next, ok)
	}
}
