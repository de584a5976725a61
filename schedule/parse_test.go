package schedule_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2"
	"github.com/pgjobs/pgjobs/internal/schedulevectors"
	"github.com/pgjobs/pgjobs/schedule"
)

func readVectors(t *testing.T) []schedulevectors.Vector {
	t.Helper()
	vectors, err := schedulevectors.Read("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	return vectors
}

// fieldsOf renders a schedule's fields as the vectors file writes them.
func fieldsOf(s schedule.Schedule) []string {
	show := func(f schedule.Field, v int) string {
		if !s.Has(f) {
			return "-"
		}
		return strconv.Itoa(v)
	}
	return []string{s.Type.String(), show(schedule.Year, s.Year), show(schedule.Month, s.Month),
		show(schedule.Day, s.Day), show(schedule.Hour, s.Hour), strconv.Itoa(s.Minute)}
}

func TestParseVectors(t *testing.T) {
	t.Parallel()
	for _, v := range readVectors(t) {
		t.Run(strconv.Quote(v.Input), func(t *testing.T) {
			s, err := schedule.Parse(v.Input)
			if v.Err != "" {
				if err == nil {
					t.Fatalf("vectors.txt:%d: Parse(%q) = %q, want error %q", v.Line, v.Input, s, v.Err)
				}
				if err.Error() != v.Err {
					t.Fatalf("vectors.txt:%d: Parse(%q) error\n got %q\nwant %q", v.Line, v.Input, err, v.Err)
				}
				var perr participle.Error
				if !asParticiple(err, &perr) {
					t.Fatalf("Parse(%q) error %T is not a participle.Error", v.Input, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("vectors.txt:%d: Parse(%q): %v", v.Line, v.Input, err)
			}
			if got := s.String(); got != v.Canonical {
				t.Errorf("vectors.txt:%d: String() = %q, want %q", v.Line, got, v.Canonical)
			}
			if got := strings.Join(fieldsOf(s), " "); got != strings.Join(v.Fields, " ") {
				t.Errorf("vectors.txt:%d: fields = %s, want %s", v.Line, got, strings.Join(v.Fields, " "))
			}
			again, err := schedule.Parse(s.String())
			if err != nil || again != s {
				t.Errorf("vectors.txt:%d: canonical %q does not round-trip: %v, %v", v.Line, s, again, err)
			}
		})
	}
}

func asParticiple(err error, target *participle.Error) bool {
	pe, ok := err.(participle.Error)
	*target = pe
	return ok
}

func TestMustParsePanicsOnInvalid(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("MustParse of an invalid schedule did not panic")
		}
	}()
	schedule.MustParse("D 25:00")
}
