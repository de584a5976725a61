// Package schedulevectors reads schedule/testdata/vectors.txt, the test vectors of the schedule
// language shared by the Go parser's tests and the SQL parser's.
package schedulevectors

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Vector is one case: a valid schedule with its canonical text and fields, or an invalid one
// with its error.
type Vector struct {
	Line      int      // the line of the file
	Input     string   // the schedule text
	Canonical string   // the canonical text; "" for an invalid input
	Fields    []string // TYPE YEAR MONTH DAY HOUR MINUTE, "-" for a field not given
	Err       string   // the Go error, such as "1:3: hour 25 is out of range 0..23"; "" when valid
}

// Read reads the vectors file at path.
func Read(path string) ([]Vector, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var vectors []Vector
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		quoted, err := strconv.QuotedPrefix(line)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		input, err := strconv.Unquote(quoted)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		rest := strings.Split(strings.TrimPrefix(line[len(quoted):], "\t"), "\t")
		v := Vector{Line: n, Input: input}
		switch {
		case len(rest) == 2 && rest[0] == "error":
			v.Err = rest[1]
		case len(rest) == 7:
			v.Canonical, v.Fields = rest[0], rest[1:]
		default:
			return nil, fmt.Errorf("%s:%d: want CANONICAL and 6 fields, or error and a message", path, n)
		}
		vectors = append(vectors, v)
	}
	if err := scanner.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return vectors, nil
}
