package jobs_test

import (
	"slices"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent/jobs"
	"github.com/pgjobs/pgjobs/sqlschema"
)

func TestNextFires(t *testing.T) {
	t.Parallel()
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	at := func(text string) time.Time {
		t.Helper()
		v, err := time.Parse(time.RFC3339, text)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	text := func(s string) *string { return &s }
	tests := []struct {
		name   string
		start  *string // the start schedule
		set    string  // when it was set
		every  []string
		loc    *time.Location
		anchor string
		after  string
		n      int
		want   []string
	}{
		{name: "start schedule in the future, two recurrences merged", start: text("D 2026.12.01 00:00"), set: "2026-11-20T00:00:00Z",
			every: []string{"D 19:30", "D 6:30"}, loc: berlin, after: "2026-11-25T00:00:00Z", n: 4,
			want: []string{"2026-12-01T06:30:00+01:00", "2026-12-01T19:30:00+01:00", "2026-12-02T06:30:00+01:00", "2026-12-02T19:30:00+01:00"}},
		{name: "a recurrence at the activation fires", start: text("D 2026.12.01 06:30"), set: "2026-11-20T00:00:00Z",
			every: []string{"D 6:30"}, loc: berlin, after: "2026-11-25T00:00:00Z", n: 2,
			want: []string{"2026-12-01T06:30:00+01:00", "2026-12-02T06:30:00+01:00"}},
		{name: "start schedule passed: the recurrences only", start: text("D 2026.11.01 00:00"), set: "2026-10-01T00:00:00Z",
			every: []string{"D 19:30"}, loc: berlin, after: "2026-11-25T12:00:00+01:00", n: 2,
			want: []string{"2026-11-25T19:30:00+01:00", "2026-11-26T19:30:00+01:00"}},
		{name: "future start without recurrence fires once", start: text("D 2026.12.01 08:00"), set: "2026-11-20T00:00:00Z",
			loc: berlin, after: "2026-11-25T00:00:00Z", n: 3, want: []string{"2026-12-01T08:00:00+01:00"}},
		{name: "start without recurrence that fired never fires again", start: text("D 2026.12.01 08:00"), set: "2026-11-20T00:00:00Z",
			loc: berlin, after: "2026-12-02T00:00:00Z", n: 3},
		{name: "start schedule set after its only fire: never active", start: text("D 2026.11.01 00:00"), set: "2026-11-02T00:00:00Z",
			every: []string{"D 6:30"}, loc: berlin, after: "2026-11-25T00:00:00Z", n: 3},
		{name: "interval from the anchor", every: []string{"I 0:05"}, loc: time.UTC, anchor: "2026-11-20T10:00:00Z",
			after: "2026-11-20T10:07:30Z", n: 3, want: []string{"2026-11-20T10:10:00Z", "2026-11-20T10:15:00Z", "2026-11-20T10:20:00Z"}},
		{name: "interval merged with a daily time", every: []string{"I 1 0:00", "D 12:00"}, loc: time.UTC, anchor: "2026-11-20T10:00:00Z",
			after: "2026-11-20T10:00:00Z", n: 4,
			want: []string{"2026-11-20T12:00:00Z", "2026-11-21T10:00:00Z", "2026-11-21T12:00:00Z", "2026-11-22T10:00:00Z"}},
		{name: "a time two recurrences share fires once", every: []string{"D 12:00", "W 12:00"}, loc: time.UTC,
			after: "2026-11-20T00:00:00Z", n: 2, want: []string{"2026-11-20T12:00:00Z", "2026-11-21T12:00:00Z"}},
		{name: "one-off recurrence in the past never fires again", every: []string{"D 2003.12.01 17:30"}, loc: time.UTC,
			after: "2026-11-20T00:00:00Z", n: 3},
		{name: "startup job without recurrence has no fire times", loc: time.UTC, after: "2026-11-20T00:00:00Z", n: 3},
		{name: "none asked", every: []string{"D 12:00"}, loc: time.UTC, after: "2026-11-20T00:00:00Z", n: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := sqlschema.StoredJob{Name: "J", StartSchedule: tt.start, Schedules: tt.every}
			if tt.set != "" {
				s.StartSet = at(tt.set)
			}
			var anchor time.Time
			if tt.anchor != "" {
				anchor = at(tt.anchor)
			}
			fires, err := jobs.NextFires(s, tt.loc, anchor, at(tt.after), tt.n)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range fires {
				if f.Location() != tt.loc {
					t.Errorf("fire %v is not in %v", f, tt.loc)
				}
				got = append(got, f.Format(time.RFC3339))
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("NextFires:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestNextFiresStoredScheduleInvalid(t *testing.T) {
	t.Parallel()
	_, err := jobs.NextFires(sqlschema.StoredJob{Name: "J", OwnerWas: "alice", Schedules: []string{"D 25:00"}}, time.UTC, time.Time{}, time.Now(), 1)
	if want := `job "J" of "alice": stored schedule "D 25:00": 1:3: hour 25 is out of range 0..23`; err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
