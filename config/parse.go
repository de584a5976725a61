package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"
)

// lineKind says what a line of the file sets.
type lineKind int

const (
	kindNone            lineKind = iota // a blank line or a comment
	kindSystem                          // system=VERSION
	kindMaster                          // master=LOGLEVEL
	kindSessions                        // sessions=N
	kindScramIterations                 // scram_iterations=N
	kindDatabase                        // ID=host|port|database|loglevel|user|notification[|recipient]
)

// settingName names a setting that may appear once, for errors.
func (k lineKind) settingName() string {
	switch k {
	case kindSystem:
		return "system"
	case kindMaster:
		return "master"
	case kindSessions:
		return "sessions"
	case kindScramIterations:
		return "scram_iterations"
	}
	return "database"
}

// line is one line of the file, with what it sets.
type line struct {
	text       string // the line without its '\n'
	start, end int    // the setting's bytes in text; what precedes and follows is blanks and the comment
	kind       lineKind
	system     string   // for kindSystem
	master     LogLevel // for kindMaster
	sessions   int      // for kindSessions
	iterations int      // for kindScramIterations
	db         Database // for kindDatabase
}

// Load reads and parses the file at path (see Parse). It reads at most MaxFileSize+1 bytes, so a file that
// is too long is refused without being read whole. The error for a missing file wraps fs.ErrNotExist.
func Load(path string) (*File, error) {
	rf, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	defer rf.Close()
	data, err := readLimited(rf)
	if err != nil {
		return nil, fmt.Errorf("read configuration: %w", err)
	}
	return Parse(path, data)
}

// Parse parses the contents of a pgjobs.conf file; path is used only in error messages. The file has one
// setting per line:
//
//	system=VERSION     the installed version: numbers separated by dots, e.g. 0.00
//	master=LOGLEVEL    the master agent's log level, 0..5
//	sessions=N         the most sessions the agent opens on each server, MinSessions..MaxSessions
//	scram_iterations=N the most SCRAM iterations the agent computes to log in as a role, 1..MaxScramIterations
//	ID=host|port|database|loglevel|user|notification[|recipient]
//
// ID is the database's number, 1..MaxID without leading zeros; host, port and user may be the word
// default; a row without a recipient has None. '#' starts a comment that runs to the end of the line.
// Blank lines are ignored, and so are blanks before and after a setting, but a blank next to '=' or '|'
// or inside a value is an error. No two rows may have the same id, nor the same resolved host, port and
// database name (default is the same as localhost and 5432). system, master, sessions and
// scram_iterations may each appear once; a file without them has System "", Master 0, Sessions 0 and
// ScramIterations 0.
//
// A file may have at most MaxFileSize bytes and a line at most MaxLineLength bytes; a longer file is
// refused at the line where it passes the limit, before any line is looked at.
//
// Parse reports the first error only, as a one-line *ParseError "PATH:LINE: problem". An error quotes at
// most 200 bytes of a value, followed by "..." and the value's length when it is longer.
func Parse(path string, data []byte) (*File, error) {
	if len(data) > MaxFileSize {
		n := 1 + bytes.Count(data[:MaxFileSize], []byte("\n"))
		return nil, &ParseError{Path: path, Line: n, Err: fmt.Errorf("the file is longer than the limit of %d bytes (1 MiB)", MaxFileSize)}
	}
	f := &File{path: path}
	lines := strings.Split(string(data), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	} else {
		f.noEOL = true
	}
	f.lines = make([]line, 0, len(lines))
	settingLines := map[lineKind]int{} // the line of each setting but the database rows
	ids := make(map[int]int)           // id -> line number
	type row struct {
		db   Database
		line int
	}
	targets := make(map[targetKey]row)
	for i, text := range lines {
		n := i + 1
		if len(text) > MaxLineLength {
			return nil, &ParseError{Path: path, Line: n, Err: errLineLength(len(text))}
		}
		l, err := parseLine(text)
		if err != nil {
			return nil, &ParseError{Path: path, Line: n, Err: err}
		}
		switch l.kind {
		case kindSystem, kindMaster, kindSessions, kindScramIterations:
			if first, ok := settingLines[l.kind]; ok {
				return nil, &ParseError{Path: path, Line: n, Err: fmt.Errorf("duplicate %s setting (first on line %d)", l.kind.settingName(), first)}
			}
			settingLines[l.kind] = n
		case kindDatabase:
			if first, ok := ids[l.db.ID]; ok {
				return nil, &ParseError{Path: path, Line: n, Err: fmt.Errorf("duplicate id %d (first on line %d)", l.db.ID, first)}
			}
			ids[l.db.ID] = n
			k := l.db.key()
			if other, ok := targets[k]; ok {
				return nil, &ParseError{Path: path, Line: n, Err: fmt.Errorf("database %w", errTarget(other.db, other.line))}
			}
			targets[k] = row{l.db, n}
		}
		f.lines = append(f.lines, l)
	}
	return f, nil
}

// errTarget is the error for a second row with the target of d, which is on line n.
func errTarget(d Database, n int) error {
	return fmt.Errorf("%s is %w as id %d (line %d)", clip(d.Target()), ErrExists, d.ID, n)
}

// errLineLength is the error for a line of n bytes, more than MaxLineLength.
func errLineLength(n int) error {
	return fmt.Errorf("the line has %d bytes, more than the limit of %d", n, MaxLineLength)
}

// parseLine parses one line, without its '\n'.
func parseLine(text string) (line, error) {
	l := line{text: text}
	body := text
	if i := strings.IndexByte(text, '#'); i >= 0 {
		body = text[:i]
	}
	l.start = len(body) - len(strings.TrimLeft(body, blanks))
	l.end = len(strings.TrimRight(body, blanks))
	if l.start >= l.end {
		l.start, l.end = 0, 0
		return l, nil
	}
	s := text[l.start:l.end]
	eq := strings.IndexByte(s, '=')
	if eq < 0 {
		return l, fmt.Errorf("missing \"=\" in %s (expected NAME=VALUE)", quote(s))
	}
	if eq > 0 && isBlank(s[eq-1]) {
		return l, errors.New(`blank before "="`)
	}
	if eq+1 < len(s) && isBlank(s[eq+1]) {
		return l, errors.New(`blank after "="`)
	}
	name, value := s[:eq], s[eq+1:]
	switch {
	case name == "system":
		if err := checkVersion(value); err != nil {
			return l, err
		}
		l.kind, l.system = kindSystem, value
	case name == "master":
		level, err := parseLevel("master loglevel", value)
		if err != nil {
			return l, err
		}
		l.kind, l.master = kindMaster, level
	case name == "sessions":
		n, err := parseNumber("sessions", value, MinSessions, MaxSessions)
		if err != nil {
			return l, err
		}
		l.kind, l.sessions = kindSessions, n
	case name == "scram_iterations":
		n, err := parseNumber("scram_iterations", value, 1, MaxScramIterations)
		if err != nil {
			return l, err
		}
		l.kind, l.iterations = kindScramIterations, n
	case name != "" && strings.Trim(name, digits) == "":
		db, err := parseRow(name, value)
		if err != nil {
			return l, err
		}
		l.kind, l.db = kindDatabase, db
	default:
		return l, fmt.Errorf("unknown setting %s (expected system, master, sessions, scram_iterations or a numeric database id)", quote(name))
	}
	return l, nil
}

// rowFields names the fields of a database row, for the error about their number.
const rowFields = "host|port|database|loglevel|user|notification[|recipient]"

// parseRow parses the row of database id (a string of digits): host|port|...
func parseRow(id, value string) (Database, error) {
	var d Database
	n, err := parseNumber("id", id, 1, MaxID)
	if err != nil {
		return d, err
	}
	d.ID = n
	for i := 0; i < len(value); i++ {
		if value[i] != '|' {
			continue
		}
		if i > 0 && isBlank(value[i-1]) {
			return d, errors.New(`blank before "|"`)
		}
		if i+1 < len(value) && isBlank(value[i+1]) {
			return d, errors.New(`blank after "|"`)
		}
	}
	fields := strings.Split(value, "|")
	if len(fields) != 6 && len(fields) != 7 {
		return d, fmt.Errorf("database row has %d fields, want 6 or 7 (%s)", len(fields), rowFields)
	}
	if len(fields) == 6 {
		fields = append(fields, None)
	}
	d.Host, d.Port, d.Name, d.User, d.Notification, d.Recipient = fields[0], fields[1], fields[2], fields[4], fields[5], fields[6]
	if err := checkHost(d.Host); err != nil {
		return d, err
	}
	if err := checkPort(d.Port); err != nil {
		return d, err
	}
	if err := checkValue("database", d.Name); err != nil {
		return d, err
	}
	if d.LogLevel, err = parseLevel("loglevel", fields[3]); err != nil {
		return d, err
	}
	for _, f := range []struct{ name, value string }{
		{"user", d.User}, {"notification", d.Notification}, {"recipient", d.Recipient},
	} {
		if err := checkValue(f.name, f.value); err != nil {
			return d, err
		}
	}
	return d, nil
}

const (
	blanks = " \t\r\v\f"
	digits = "0123456789"
)

// isBlank reports whether b is one of blanks.
func isBlank(b byte) bool { return strings.IndexByte(blanks, b) >= 0 }

// checkValue checks what every value must be: not empty, without a blank, a control character, '|', '='
// or '#'. field names the value in the error.
func checkValue(field, s string) error {
	if s == "" {
		return fmt.Errorf("%s is empty", field)
	}
	for _, r := range s {
		switch {
		case r == '\n':
			return fmt.Errorf("%s %s contains a newline", field, quote(s))
		case unicode.IsSpace(r):
			return fmt.Errorf("%s %s contains a blank", field, quote(s))
		case unicode.IsControl(r):
			return fmt.Errorf("%s %s contains a control character", field, quote(s))
		case r == '|' || r == '=' || r == '#':
			return fmt.Errorf("%s %s contains %q", field, quote(s), string(r))
		}
	}
	return nil
}

// checkVersion checks a system version: numbers separated by dots.
func checkVersion(s string) error {
	const field = "system version"
	if err := checkValue(field, s); err != nil {
		return err
	}
	for part := range strings.SplitSeq(s, ".") {
		if part == "" || strings.Trim(part, digits) != "" {
			return fmt.Errorf("%s %s is not numbers separated by dots (e.g. 0.00)", field, quote(s))
		}
	}
	return nil
}

// checkHost checks a host field: a name, an address, a socket directory, a comma-separated list of those,
// or default.
func checkHost(s string) error {
	if err := checkValue("host", s); err != nil {
		return err
	}
	if strings.Contains(s, ",") {
		for h := range strings.SplitSeq(s, ",") {
			if h == "" {
				return fmt.Errorf("host %s has an empty entry in its list", quote(s))
			}
		}
	}
	return nil
}

// checkPort checks a port field: 1..65535 or default.
func checkPort(s string) error {
	if err := checkValue("port", s); err != nil || s == Default {
		return err
	}
	if strings.Trim(s, digits) != "" {
		return fmt.Errorf("port %s is neither a number nor %s", quote(s), Default)
	}
	_, err := parseNumber("port", s, 1, 65535)
	return err
}

// parseLevel parses a log level; field names it in the error.
func parseLevel(field, s string) (LogLevel, error) {
	if err := checkValue(field, s); err != nil {
		return 0, err
	}
	n, err := parseNumber(field, s, 0, int(MaxLogLevel))
	return LogLevel(n), err
}

// parseNumber parses a decimal number min..max written without sign or leading zeros; field names it in
// the error.
func parseNumber(field, s string, low, high int) (int, error) {
	switch {
	case s == "":
		return 0, fmt.Errorf("%s is empty", field)
	case strings.Trim(s, digits) != "":
		return 0, fmt.Errorf("%s %s is not a number", field, quote(s))
	case len(s) > 1 && s[0] == '0':
		return 0, fmt.Errorf("%s %s has a leading zero", field, quote(s))
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < low || n > high {
		return 0, fmt.Errorf("%s %s is out of range %d..%d", field, quote(s), low, high)
	}
	return n, nil
}
