// Package config reads, validates and atomically rewrites pgjobs.conf, which holds no password: connections use libpq's PGPASSWORD, ~/.pgpass and service files.
package config

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// DefaultPath is where pgjobs.conf lives when neither a flag nor PathVariable names another file.
const DefaultPath = "/usr/share/pgjobs/pgjobs.conf"

// PathVariable is the environment variable that overrides DefaultPath.
const PathVariable = "PGJOBS_CONF"

// ResolvePath returns the configuration file to use: flagValue when it is not empty, else the value of
// PathVariable read through getenv when that is not empty, else DefaultPath. A nil getenv means os.Getenv.
func ResolvePath(flagValue string, getenv func(string) string) string {
	if flagValue != "" {
		return flagValue
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	if p := getenv(PathVariable); p != "" {
		return p
	}
	return DefaultPath
}

// The words and values that stand in for a field left to its default.
const (
	// Default is the word that, in a host, port or user field, means DefaultHost, DefaultPort or DefaultUser.
	Default = "default"
	// DefaultHost is the host of a host field that says Default.
	DefaultHost = "localhost"
	// DefaultPort is the port of a port field that says Default.
	DefaultPort = 5432
	// DefaultUser is the role of a user field that says Default.
	DefaultUser = "postgres"
	// None is what an unused notification or recipient field holds.
	None = "none"
)

// MaxID is the largest database id; ids run from 1 to MaxID (PostgreSQL's int4 range).
const MaxID = 1<<31 - 1

// ErrExists is wrapped by the errors that refuse a second row for an id or for a host, port and database.
var ErrExists = errors.New("already configured")

// ErrNotConfigured is wrapped by the errors that name a database id the file does not have.
var ErrNotConfigured = errors.New("not configured")

// LogLevel is how much an agent logs, from 0 (errors only) to MaxLogLevel (everything, with debugging).
// Levels 1 and 2 add system information; 3 and 4 are reserved.
type LogLevel int

// MaxLogLevel is the highest LogLevel; the lowest is 0.
const MaxLogLevel LogLevel = 5

// Valid reports whether l is in 0..MaxLogLevel.
func (l LogLevel) Valid() bool { return l >= 0 && l <= MaxLogLevel }

// String returns l as the file writes it, a decimal number.
func (l LogLevel) String() string { return strconv.Itoa(int(l)) }

// ParseLogLevel parses a log level as the file writes it: one digit 0..5.
func ParseLogLevel(s string) (LogLevel, error) {
	n, err := parseNumber("loglevel", s, 0, int(MaxLogLevel))
	return LogLevel(n), err
}

// Database is one database row of pgjobs.conf: ID=host|port|database|loglevel|user|notification|recipient.
// Host, Port and User keep the text of the file, including the word Default; the Resolved methods give the
// values in force. In the values given to the mutators of File, an empty Host, Port or User means Default
// and an empty Notification or Recipient means None.
type Database struct {
	// ID identifies the database's agent (its log folder is /var/log/pgjobs/ID); 1..MaxID.
	ID int
	// Host is a host name, an address, a unix-socket directory, a comma-separated list of those, or Default.
	Host string
	// Port is a TCP port 1..65535 (the socket's number for a unix socket) or Default.
	Port string
	// Name is the database name.
	Name string
	// LogLevel is the agent's log level.
	LogLevel LogLevel
	// User is the role the agent connects as, or Default.
	User string
	// Notification is a placeholder for future use; pgjobs does not interpret it.
	Notification string
	// Recipient is a placeholder for future use; pgjobs does not interpret it. A six-field row has None.
	Recipient string
}

// ResolvedHost returns Host, or DefaultHost when Host is Default or empty.
func (d Database) ResolvedHost() string {
	if d.Host == Default || d.Host == "" {
		return DefaultHost
	}
	return d.Host
}

// ResolvedPort returns Port as a number, DefaultPort when Port is Default or empty, and 0 when Port is
// not a valid port.
func (d Database) ResolvedPort() int {
	if d.Port == Default || d.Port == "" {
		return DefaultPort
	}
	n, err := parseNumber("port", d.Port, 1, 65535)
	if err != nil {
		return 0
	}
	return n
}

// ResolvedUser returns User, or DefaultUser when User is Default or empty.
func (d Database) ResolvedUser() string {
	if d.User == Default || d.User == "" {
		return DefaultUser
	}
	return d.User
}

// Target names the database by its resolved host, port and name, e.g. "localhost:5432/sales", for
// messages. No two rows of a file have the same resolved host, port and name.
func (d Database) Target() string {
	return d.ResolvedHost() + ":" + strconv.Itoa(d.ResolvedPort()) + "/" + d.Name
}

// DSN returns a libpq keyword/value connection string for the row: host, port, dbname and user,
// and target_session_attrs=read-write for a host list, so that a failover is followed to the new
// primary. The password is never part of it: libpq conventions find it (PGPASSWORD, ~/.pgpass).
func (d Database) DSN() string {
	parts := []string{
		"host=" + dsnValue(d.ResolvedHost()),
		"port=" + strconv.Itoa(d.ResolvedPort()),
		"dbname=" + dsnValue(d.Name),
		"user=" + dsnValue(d.ResolvedUser()),
		"connect_timeout=10",
	}
	if strings.Contains(d.ResolvedHost(), ",") {
		parts = append(parts, "target_session_attrs=read-write")
	}
	return strings.Join(parts, " ")
}

// dsnValue quotes a value of a keyword/value connection string when it needs it.
func dsnValue(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// targetKey identifies a database by its resolved host, port and name, as Target does in text.
type targetKey struct {
	host string
	port int
	name string
}

// key returns d's targetKey; two rows with equal keys are the same database.
func (d Database) key() targetKey {
	return targetKey{host: d.ResolvedHost(), port: d.ResolvedPort(), name: d.Name}
}

// Line returns the row as the file writes it, always with seven fields, e.g.
// "1234=default|default|MyExamples|5|default|none|none".
func (d Database) Line() string {
	d = d.withDefaults()
	return strconv.Itoa(d.ID) + "=" + strings.Join([]string{
		d.Host, d.Port, d.Name, d.LogLevel.String(), d.User, d.Notification, d.Recipient,
	}, "|")
}

// withDefaults returns d with its empty optional fields filled as the mutators document.
func (d Database) withDefaults() Database {
	for _, f := range []*string{&d.Host, &d.Port, &d.User} {
		if *f == "" {
			*f = Default
		}
	}
	for _, f := range []*string{&d.Notification, &d.Recipient} {
		if *f == "" {
			*f = None
		}
	}
	return d
}

// validate checks every field of d as the parser does; the id is checked only when checkID is set.
func (d Database) validate(checkID bool) error {
	if checkID && (d.ID < 1 || d.ID > MaxID) {
		return fmt.Errorf("id \"%d\" is out of range 1..%d", d.ID, MaxID)
	}
	if err := checkHost(d.Host); err != nil {
		return err
	}
	if err := checkPort(d.Port); err != nil {
		return err
	}
	if err := checkValue("database", d.Name); err != nil {
		return err
	}
	if !d.LogLevel.Valid() {
		return fmt.Errorf("loglevel \"%d\" is out of range 0..%d", d.LogLevel, MaxLogLevel)
	}
	for _, f := range []struct{ name, value string }{
		{"user", d.User}, {"notification", d.Notification}, {"recipient", d.Recipient},
	} {
		if err := checkValue(f.name, f.value); err != nil {
			return err
		}
	}
	return nil
}

// ParseError is an error in a configuration file, at a line.
type ParseError struct {
	// Path is the file's path as the caller gave it.
	Path string
	// Line is the line number, from 1.
	Line int
	// Err says what is wrong; it may wrap ErrExists.
	Err error
}

// Error returns "PATH:LINE: problem".
func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err) }

// Unwrap returns e.Err.
func (e *ParseError) Unwrap() error { return e.Err }
