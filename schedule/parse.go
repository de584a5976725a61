package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/alecthomas/participle/v2"
	"github.com/alecthomas/participle/v2/lexer"
)

// The grammar, one type per rule:
//
//	schedule ::= type " " body
//	body     ::= [date " "] time
//	date     ::= number ("." number)*      checked afterwards: [[yyyy.]mm.]dd, or wd, or id
//	time     ::= [number ":"] number       hh:nn or nn
type scheduleNode struct {
	Type typeNode `parser:"@@"`
	Body bodyNode `parser:"Space @@"`
}

type typeNode struct {
	Pos    lexer.Position
	Letter string `parser:"@Word"`
}

type bodyNode struct {
	Pos  lexer.Position
	Date *dateNode `parser:"(@@ Space)?"`
	Time timeNode  `parser:"@@"`
}

type dateNode struct {
	Pos   lexer.Position
	Parts []numberNode `parser:"@@ (\".\" @@)*"`
}

type timeNode struct {
	Pos    lexer.Position
	Hour   *numberNode `parser:"(@@ \":\")?"`
	Minute numberNode  `parser:"@@"`
}

type numberNode struct {
	Pos  lexer.Position
	Text string `parser:"@Number"`
}

var scheduleLexer = lexer.MustSimple([]lexer.SimpleRule{
	{Name: "Word", Pattern: `[A-Za-z_]+`},
	{Name: "Number", Pattern: `-?[0-9]+`},
	{Name: "Space", Pattern: ` `},
	{Name: "Punct", Pattern: `[.:]`},
	{Name: "Other", Pattern: `(?s).`},
})

// scheduleParser is built once and never changed; participle parsers are safe for concurrent use.
var scheduleParser = participle.MustBuild[scheduleNode](
	participle.Lexer(scheduleLexer),
	participle.UseLookahead(3),
)

// maxDays is the most days month m (1..12) can have, February counted in a leap year.
var maxDays = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

// MaxLength is the longest schedule text Parse reads, in bytes; the longest canonical schedule has 19.
const MaxLength = 64

// Parse reads a schedule such as "D 2003.12.01 17:30", "D -1 17:30", "W 1 7:30" or "I 0:05".
// The type letter may be in either case; fields are separated by exactly one space.
// An error reads "1:COLUMN: reason", the column being where the problem starts, and
// implements participle.Error.
func Parse(text string) (Schedule, error) {
	if len(text) > MaxLength {
		return Schedule{}, participle.Errorf(lexer.Position{Offset: MaxLength, Line: 1, Column: MaxLength + 1},
			"a schedule is at most %d characters long", MaxLength)
	}
	node, err := scheduleParser.ParseString("", text)
	if err != nil {
		return Schedule{}, plainSyntaxError(text, err)
	}
	return node.schedule()
}

// MustParse is Parse for schedules known to be valid, such as constants in tests and examples;
// it panics on an error.
func MustParse(text string) Schedule {
	s, err := Parse(text)
	if err != nil {
		panic(fmt.Sprintf("schedule.MustParse(%q): %v", text, err))
	}
	return s
}

// plainSyntaxError rewords participle's syntax errors in words a user of the schedule language knows.
func plainSyntaxError(text string, err error) error {
	var unexpected *participle.UnexpectedTokenError
	if !errors.As(err, &unexpected) {
		return err
	}
	tok := unexpected.Unexpected
	var what string
	switch {
	case strings.TrimSpace(text) == "":
		what = "empty schedule (expected a type and a time, such as D 17:30)"
	case tok.Pos.Offset == 0:
		what = fmt.Sprintf("unknown schedule type %q (expected D, W or I)", tok.Value)
	case tok.Pos.Offset == len(leadingWord(text)):
		what = "expected one space after the schedule type"
	case tok.EOF() && strings.HasSuffix(text, ":"):
		what = "unexpected end of schedule (expected the minute after the hour)"
	case tok.EOF():
		what = "unexpected end of schedule (expected a time such as 17:30)"
	case tok.Value == " ":
		what = "unexpected space (fields are separated by exactly one space)"
	default:
		what = fmt.Sprintf("unexpected %q", tok.Value)
	}
	return participle.Errorf(tok.Pos, "%s", what)
}

// leadingWord returns the letters text starts with: the schedule type as written.
func leadingWord(text string) string {
	i := strings.IndexFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_')
	})
	if i < 0 {
		return text
	}
	return text[:i]
}

func (n *scheduleNode) schedule() (Schedule, error) {
	var s Schedule
	switch strings.ToUpper(n.Type.Letter) {
	case "D":
		s.Type = Date
	case "W":
		s.Type = Weekly
	case "I":
		s.Type = Interval
	default:
		return Schedule{}, participle.Errorf(n.Type.Pos, "unknown schedule type %q (expected D, W or I)", n.Type.Letter)
	}
	body := &n.Body
	s.Given = Minute
	if body.Time.Hour != nil {
		s.Given = Hour
	}
	if date := body.Date; date != nil {
		if err := s.readDate(date); err != nil {
			return Schedule{}, err
		}
		if body.Time.Hour == nil {
			return Schedule{}, participle.Errorf(body.Time.Pos, "%s needs a time as hh:nn", dayName(s.Type))
		}
	}
	if h := body.Time.Hour; h != nil {
		var err error
		if s.Hour, err = h.inRange("hour", 0, 23); err != nil {
			return Schedule{}, err
		}
	}
	var err error
	if s.Minute, err = body.Time.Minute.inRange("minute", 0, 59); err != nil {
		return Schedule{}, err
	}
	if err := s.checkCombination(body); err != nil {
		return Schedule{}, err
	}
	return s, nil
}

// readDate fills the year, month and day fields from the part before the time.
func (s *Schedule) readDate(date *dateNode) error {
	parts := date.Parts
	if s.Type != Date && len(parts) > 1 {
		return participle.Errorf(date.Pos, "%s schedule takes no month or year", typeName(s.Type))
	}
	if len(parts) > 3 {
		return participle.Errorf(date.Pos, "a date has at most three parts: yyyy.mm.dd")
	}
	s.Given = Field(int(Hour) + len(parts))
	var err error
	if len(parts) == 3 {
		year := parts[0]
		if len(year.Text) != 4 || year.Text[0] == '-' {
			return participle.Errorf(year.Pos, "year %s must have four digits", year.Text)
		}
		s.Year, _ = strconv.Atoi(year.Text)
	}
	if len(parts) >= 2 {
		if s.Month, err = parts[len(parts)-2].inRange("month", 1, 12); err != nil {
			return err
		}
	}
	day := parts[len(parts)-1]
	switch s.Type {
	case Weekly:
		s.Day, err = day.inRange("weekday", 0, 7)
	case Interval:
		s.Day, err = day.inRange("day count", 1, 1<<31-1)
	default:
		s.Day, err = day.dayOfMonth()
	}
	return err
}

// checkCombination rejects dates that can never exist and intervals of length zero.
func (s *Schedule) checkCombination(body *bodyNode) error {
	switch {
	case s.Type == Interval && s.intervalSeconds() == 0:
		return participle.Errorf(body.Pos, "an interval must be longer than zero")
	case s.Type != Date || !s.Has(Month) || s.Day < 0:
		return nil
	case s.Day > maxDays[s.Month]:
		return participle.Errorf(body.Pos, "month %d has no day %d", s.Month, s.Day)
	case s.Has(Year) && s.Day > daysIn(s.Year, s.Month):
		return participle.Errorf(body.Pos, "%04d.%02d.%02d does not exist", s.Year, s.Month, s.Day)
	}
	return nil
}

// inRange returns the number's value, or an error naming the field when it lies outside lo..hi.
func (n *numberNode) inRange(field string, lo, hi int) (int, error) {
	v, err := strconv.Atoi(n.Text)
	if err != nil || v < lo || v > hi {
		return 0, participle.Errorf(n.Pos, "%s %s is out of range %d..%d", field, n.Text, lo, hi)
	}
	return v, nil
}

// dayOfMonth returns a day of a date schedule: 1..31, or -1..-28 counted from the month's end.
func (n *numberNode) dayOfMonth() (int, error) {
	v, err := strconv.Atoi(n.Text)
	if err != nil || v == 0 || v > 31 || v < -28 {
		return 0, participle.Errorf(n.Pos, "day %s is out of range 1..31 or -1..-28", n.Text)
	}
	return v, nil
}

// typeName names a schedule type with its article, for error messages.
func typeName(t Type) string {
	switch t {
	case Weekly:
		return "a weekly"
	case Interval:
		return "an interval"
	}
	return "a date"
}

// dayName names the day field of a schedule type with its article, for error messages.
func dayName(t Type) string {
	switch t {
	case Weekly:
		return "a weekday"
	case Interval:
		return "a day count"
	}
	return "a day"
}
