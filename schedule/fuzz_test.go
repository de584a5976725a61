package schedule_test

import (
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/schedule"
)

// FuzzParse checks that Parse never panics, that every accepted schedule round-trips through
// String, and that Next is strictly increasing.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{"D 2003.12.01 17:30", "D 12.1 17:30", "D -1 17:30", "W 1 7:30", "I 0:05",
		"D 05", "W 7 0:00", "I 3 4:05", "D 02.29 10:00", "D 02.-28 0:00", "x", "D 1.2.3.4 5:6", "D  1:00"} {
		f.Add(seed)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		f.Fatal(err)
	}
	lordHowe, err := time.LoadLocation("Australia/Lord_Howe")
	if err != nil {
		f.Fatal(err)
	}
	from := time.Date(2026, 3, 27, 23, 59, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		s, err := schedule.Parse(text)
		if err != nil {
			if err.Error() == "" {
				t.Fatalf("Parse(%q): empty error", text)
			}
			return
		}
		canonical := s.String()
		again, err := schedule.Parse(canonical)
		if err != nil {
			t.Fatalf("Parse(%q) = %q, which does not parse: %v", text, canonical, err)
		}
		if again != s || again.String() != canonical {
			t.Fatalf("Parse(%q) = %+v, but its canonical %q parses to %+v", text, s, canonical, again)
		}
		for _, loc := range []*time.Location{time.UTC, berlin, lordHowe} {
			prev := from
			s := s.In(loc).AnchoredAt(from)
			for i := range 6 {
				next, ok := s.Next(prev)
				if !ok {
					if !s.IsOneOff() {
						t.Fatalf("%q in %s: recurring schedule stopped after %d fires", canonical, loc, i)
					}
					break
				}
				if !next.After(prev) {
					t.Fatalf("%q in %s: Next(%s) = %s, not after", canonical, loc, prev, next)
				}
				prev = next
			}
		}
	})
}
