package schedule_test

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/alecthomas/participle/v2"
	"github.com/pgjobs/pgjobs/schedule"
)

// vector is one line of testdata/vectors.txt.
type vector struct {
	line      int
	input     string
	canonical string // "" for an invalid input
	fields    []string
	err       string
}

func readVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open("testdata/vectors.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var vectors []vector
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		quoted, err := strconv.QuotedPrefix(line)
		if err != nil {
			t.Fatalf("vectors.txt:%d: %v", n, err)
		}
		input, _ := strconv.Unquote(quoted)
		rest := strings.Split(strings.TrimPrefix(line[len(quoted):], "\t"), "\t")
		v := vector{line: n, input: input}
		switch {
		case len(rest) == 2 && rest[0] == "error":
			v.err = rest[1]
		case len(rest) == 7:
			v.canonical, v.fields = rest[0], rest[1:]
		default:
			t.Fatalf("vectors.txt:%d: want CANONICAL and 6 fields, or error and a message", n)
		}
		vectors = append(vectors, v)
	}
	if err := scanner.Err(); err != nil {
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
		t.Run(strconv.Quote(v.input), func(t *testing.T) {
			s, err := schedule.Parse(v.input)
			if v.err != "" {
				if err == nil {
					t.Fatalf("vectors.txt:%d: Parse(%q) = %q, want error %q", v.line, v.input, s, v.err)
				}
				if err.Error() != v.err {
					t.Fatalf("vectors.txt:%d: Parse(%q) error\n got %q\nwant %q", v.line, v.input, err, v.err)
				}
				var perr participle.Error
				if !asParticiple(err, &perr) {
					t.Fatalf("Parse(%q) error %T is not a participle.Error", v.input, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("vectors.txt:%d: Parse(%q): %v", v.line, v.input, err)
			}
			if got := s.String(); got != v.canonical {
				t.Errorf("vectors.txt:%d: String() = %q, want %q", v.line, got, v.canonical)
			}
			if got := strings.Join(fieldsOf(s), " "); got != strings.Join(v.fields, " ") {
				t.Errorf("vectors.txt:%d: fields = %s, want %s", v.line, got, strings.Join(v.fields, " "))
			}
			again, err := schedule.Parse(s.String())
			if err != nil || again != s {
				t.Errorf("vectors.txt:%d: canonical %q does not round-trip: %v, %v", v.line, s, again, err)
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
