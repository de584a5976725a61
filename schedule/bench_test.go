package schedule_test

import (
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/schedule"
	"github.com/robfig/cron/v3"
)

// benchKinds pairs each kind of schedule with the equivalent cron expression, where cron has one.
// `make bench` prints the two side by side with their ratio (bench/ratio).
var benchKinds = []struct {
	name     string
	schedule string
	cron     string
	from     string
}{
	{"daily", "D 17:30", "30 17 * * *", "2026-11-20T18:00:00+01:00"},
	{"monthly", "D 15 17:30", "30 17 15 * *", "2026-11-20T18:00:00+01:00"},
	{"yearly", "D 12.01 17:30", "30 17 1 12 *", "2026-12-02T00:00:00+01:00"},
	{"leap_day_from_non_leap_year", "D 02.29 10:00", "0 10 29 2 *", "2026-03-01T00:00:00+01:00"},
	{"weekly", "W 1 7:30", "30 7 * * 1", "2026-11-20T18:00:00+01:00"},
	{"hourly", "D 05", "5 * * * *", "2026-11-20T18:10:00+01:00"},
	{"interval", "I 0:05", "*/5 * * * *", "2026-11-20T18:07:00+01:00"},
	{"interval_vs_every", "I 0:05", "@every 5m", "2026-11-20T18:07:00+01:00"},
	{"last_day_of_month", "D -1 17:30", "", "2026-11-30T18:00:00+01:00"},
	{"past_one_off", "D 2003.12.01 17:30", "", "2026-11-20T18:00:00+01:00"},
	{"daylight_saving_gap", "D 2:30", "30 2 * * *", "2026-03-28T12:00:00+01:00"},
}

func BenchmarkNext(b *testing.B) {
	berlin := mustZone(b, "Europe/Berlin")
	parser := cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)
	for _, k := range benchKinds {
		from := mustTime(b, k.from).In(berlin)
		s := schedule.MustParse(k.schedule).In(berlin).AnchoredAt(from.Add(-time.Hour))
		b.Run(k.name+"/pgjobs", func(b *testing.B) {
			for b.Loop() {
				s.Next(from)
			}
		})
		if k.cron == "" {
			continue
		}
		spec, err := parser.Parse("CRON_TZ=Europe/Berlin " + k.cron)
		if k.cron[0] == '@' {
			spec, err = parser.Parse(k.cron)
		}
		if err != nil {
			b.Fatal(err)
		}
		b.Run(k.name+"/cron", func(b *testing.B) {
			for b.Loop() {
				spec.Next(from)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		if _, err := schedule.Parse("D 2003.12.01 17:30"); err != nil {
			b.Fatal(err)
		}
	}
}
