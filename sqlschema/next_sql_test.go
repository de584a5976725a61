package sqlschema_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/schedule"
)

// TestNextFireSQLMatchesGo: pgj_next_fire_, which pgj_jobs uses when no agent has planned a job,
// gives the fire time schedule.Next gives, to the second, for every valid schedule of the vectors
// file and random ones, from instants around the daylight-saving changes of zones with jumps of
// an hour and of half an hour, and from random instants.
func TestNextFireSQLMatchesGo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, conn := apiDatabase(t)
	rng := rand.New(rand.NewPCG(7, 11))
	var texts []string
	for _, v := range readVectors(t) {
		if v.want.msg == "" {
			texts = append(texts, v.want.canonical)
		}
	}
	var random []string
	for range 15 {
		random = append(random,
			fmt.Sprintf("D %d %d:%02d", []int{1, 15, 28, 29, 30, 31, -1, -2, -28}[rng.IntN(9)], rng.IntN(24), rng.IntN(60)),
			fmt.Sprintf("D %02d.%02d %d:%02d", 1+rng.IntN(12), []int{1, 29, 30, 31, -1}[rng.IntN(5)], rng.IntN(24), rng.IntN(60)),
			fmt.Sprintf("W %d %d:%02d", rng.IntN(8), rng.IntN(24), rng.IntN(60)),
			fmt.Sprintf("D %02d", rng.IntN(60)),
			fmt.Sprintf("I %d %d:%02d", 1+rng.IntN(3), rng.IntN(24), rng.IntN(60)), fmt.Sprintf("I %d:%02d", rng.IntN(24), 1+rng.IntN(59)))
	}
	for _, text := range random {
		if _, err := schedule.Parse(text); err == nil {
			texts = append(texts, text)
		}
	}
	texts = append(texts, "D 2:30", "D 1:30", "D 2:00", "D 3:00", "D 2:15", "W 0 2:30", "D 30", "D 45", "D 2026.03.29 2:30", "D 2026.10.04 2:10",
		"D 0000.01.01 00:00", "D 0000.02.29 1:00", "D 9999.12.31 23:59") // years at the ends of four digits
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Sao_Paulo", "Pacific/Chatham"}
	var cases []struct {
		text, zone    string
		after, anchor time.Time
	}
	for _, zone := range zones {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		var afters []time.Time
		for _, base := range []time.Time{
			time.Date(2026, 3, 29, 0, 30, 0, 0, loc), time.Date(2026, 10, 25, 0, 30, 0, 0, loc), // Europe
			time.Date(2026, 3, 8, 1, 30, 0, 0, loc), time.Date(2026, 11, 1, 0, 45, 0, 0, loc), // America
			time.Date(2026, 4, 5, 1, 20, 0, 0, loc), time.Date(2026, 10, 4, 1, 40, 0, 0, loc), // Lord Howe
			time.Date(2026, 4, 5, 2, 30, 0, 0, loc), time.Date(2026, 9, 27, 2, 30, 0, 0, loc), // Chatham
		} {
			for _, d := range []time.Duration{0, 59*time.Minute + 30*time.Second, 150 * time.Minute} {
				afters = append(afters, base.Add(d))
			}
		}
		for range 3 {
			afters = append(afters, time.Unix(1_700_000_000+rng.Int64N(400_000_000), int64(rng.IntN(1_000_000))*1000))
		}
		for _, after := range afters {
			for _, text := range texts {
				cases = append(cases, struct {
					text, zone    string
					after, anchor time.Time
				}{text, zone, after, after.Add(-time.Duration(rng.Int64N(int64(72 * time.Hour)))).Truncate(time.Microsecond)})
			}
		}
	}
	n := len(cases)
	textsArg, zonesArg, aftersArg, anchorsArg := make([]string, n), make([]string, n), make([]time.Time, n), make([]time.Time, n)
	for i, c := range cases {
		textsArg[i], zonesArg[i], aftersArg[i], anchorsArg[i] = c.text, c.zone, c.after, c.anchor
	}
	rows, err := conn.Query(ctx, `SELECT pgjobs.pgj_next_fire_(t, a, z, n) FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::timestamptz[]) WITH ORDINALITY AS u(t, a, z, n, i) ORDER BY i`,
		textsArg, aftersArg, zonesArg, anchorsArg)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[*time.Time])
	if err != nil || len(got) != n {
		t.Fatalf("%d answers for %d cases: %v", len(got), n, err)
	}
	bad := 0
	for i, c := range cases {
		loc, _ := time.LoadLocation(c.zone)
		s := schedule.MustParse(c.text).In(loc).AnchoredAt(c.anchor)
		want, ok := s.Next(c.after)
		switch {
		case !ok && got[i] == nil:
		case ok && got[i] == nil && want.Year() > 294276: // past PostgreSQL's last timestamp
		case ok && got[i] != nil && got[i].Equal(want):
		default:
			bad++
			if bad <= 10 {
				t.Errorf("%q in %s after %s (anchor %s): SQL %v, Go %v (%v)", c.text, c.zone, c.after.In(loc), c.anchor.In(loc), got[i], want.In(loc), ok)
			}
		}
	}
	if bad > 0 {
		t.Fatalf("%d of %d cases differ", bad, n)
	}
	t.Logf("%d cases agree", n)
}
