// Package agentlog is the slog.Handler that writes the pgjobs agent logs: one date|time|status|message file per agent and local day.
package agentlog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"
)

// slog levels of the pgjobs log levels 0..5 (see MinLevel).
const (
	// LevelDebug is debugging information, shown at log level 5 only.
	LevelDebug = slog.LevelDebug
	// LevelInfo is "more system information" such as each run, shown at log levels 2 and up.
	LevelInfo = slog.LevelInfo
	// LevelEssential is "essential system information" (start, stop, database connected or lost, job failed),
	// shown at log levels 1 and up.
	LevelEssential = slog.Level(2)
	// LevelError is an error, shown at every log level.
	LevelError = slog.LevelError
)

// MasterAgent is the Agent (and folder) name of the master agent; database agents use their numeric id.
const MasterAgent = "master"

// StatusKey is the key of the attribute that gives a line's status field: the state of the agent when the event
// happened, a short word such as starting, sleeping, firing, reconnecting or stopping. It is an attribute given
// to the record or to WithAttrs, whatever groups WithGroup opened, but not one inside a slog.Group with a key;
// the record's wins over WithAttrs'. It is not repeated in the message; an empty value counts as absent.
const StatusKey = "status"

// DefaultStatus is the status field of a record that has no StatusKey attribute.
const DefaultStatus = "running"

// The statuses a database agent logs its events in.
const (
	StatusStarting     = "starting"
	StatusWaiting      = "waiting" // another agent is the active one
	StatusSleeping     = "sleeping"
	StatusFiring       = "firing"
	StatusReconnecting = "reconnecting"
	StatusStopping     = "stopping"
)

// ErrClosed is returned by Handle and Reopen after Close.
var ErrClosed = errors.New("agentlog: handler closed")

// MinLevel returns the lowest slog level shown at a pgjobs log level: 0 gives LevelError (errors only),
// 1 LevelEssential, 2 to 4 LevelInfo (3 and 4 are reserved and behave as 2), 5 LevelDebug (everything).
// Log levels below 0 count as 0 and above 5 as 5.
func MinLevel(logLevel int) slog.Level {
	switch {
	case logLevel <= 0:
		return LevelError
	case logLevel == 1:
		return LevelEssential
	case logLevel <= 4:
		return LevelInfo
	default:
		return LevelDebug
	}
}

// Options configures a Handler.
type Options struct {
	// Dir is the log root, e.g. /var/log/pgjobs. Required.
	Dir string
	// Agent is MasterAgent or the database agent's id, a decimal number. Its files are in Dir/Agent.
	Agent string
	// Level is the minimum level written; nil means MinLevel(0), errors only, the spec's default.
	// A *slog.LevelVar set with MinLevel lets the agent change the level at run time.
	Level slog.Leveler
	// Location is the zone of the dates and times in lines and file names; nil means time.Local.
	Location *time.Location
	// MaxSizeMB is the size in megabytes (MiB) past which a day's file is rotated; 0 means 100.
	MaxSizeMB int
	// MaxAge is the number of days of files to keep: a day file and its rotated pieces are removed once their
	// date is more than MaxAge days before the date being written, so 7 keeps today and the 7 previous days.
	// 0 keeps all.
	MaxAge int
	// MaxBackups is the number of rotated pieces of one day's file to keep; 0 keeps all.
	MaxBackups int
	// Compress gzips the rotated pieces of a day's file.
	Compress bool
	// Also, if not nil, receives a copy of every line (the agent's --foreground terminal).
	Also io.Writer
	// Errors receives a line, in a single Write, when a record cannot be written (the folder cannot be
	// created, the file cannot be opened or written, old files cannot be removed, Also fails): at once for
	// the first failure, then at most once per ReportInterval, each line saying how many failures it
	// stands for; then one line when records are written again, and at Close one for the failures no line
	// showed yet. nil means os.Stderr: a log that cannot be written is never silent.
	Errors io.Writer
	// Now is the clock of ReportInterval and the time of records without one; nil means time.Now.
	Now func() time.Time
}

// Handler is a slog.Handler that writes the pgjobs log format to Dir/Agent/YYYY.MM.DD.log, one file per local
// day of the records' times, each line
//
//	date|time|status|message
//
// with date YYYY.MM.DD and time HH:MM:SS.mmm (truncated) in Options.Location, status the value of the StatusKey
// attribute (DefaultStatus if absent), and message the record's message followed by each of its other
// attributes as a blank and key=value. Attributes of groups (slog.Group, WithGroup) have dotted keys; a record
// without a time is dated time.Now(). For example:
//
//	2003.06.23|14:05:09.123|firing|job fired job=17 db.host=localhost cmd="VACUUM pgbench_history"
//
// Every line is one line that splits into exactly 4 fields on its first 3 '|':
//   - in the message, '\' is written as `\\`, '|' as `\|`, newline as `\n`, carriage return as `\r`, tab as `\t`,
//     other control characters, format characters (U+202E, U+200B, ...), U+2028, U+2029 and invalid UTF-8
//     bytes as `\xHH`, `\uHHHH` or `\UHHHHHHHH`;
//   - a key or value that is empty or holds a blank, '|', '=', '"', a control or other non-printing character
//     is written with strconv.Quote, and every '|' in the quoted text as `\x7c`, so strconv.Unquote restores it;
//   - in the status, '|' and non-printing characters other than ' ' are replaced by '_'.
//
// A Handler is safe for concurrent use; handlers derived with WithAttrs and WithGroup share its files and lock,
// and closing any of them closes them all. Each line is written with a single Write call.
//
// Each day's file is written by its own lumberjack.Logger, which creates files with mode 0600 and keeps an idle
// goroutine for the life of the process after its first write.
type Handler struct {
	out    *output
	level  slog.Leveler
	attrs  []byte // " key=value" of the attributes added by WithAttrs, formatted
	prefix string // the open groups as "a.b.", "" at top level
	status string // the status given by WithAttrs, "" if none
}

var _ slog.Handler = (*Handler)(nil)

// New returns a Handler for opts. It does no I/O: the folder Dir/Agent (mode 0755) and the day's file are
// created with the first record, or by Open.
func New(opts Options) (*Handler, error) {
	if opts.Dir == "" {
		return nil, errors.New("agentlog: no log directory")
	}
	if !validAgent(opts.Agent) {
		return nil, fmt.Errorf("agentlog: agent %q is neither %q nor a number", opts.Agent, MasterAgent)
	}
	for _, o := range []struct {
		name  string
		value int
	}{{"MaxSizeMB", opts.MaxSizeMB}, {"MaxAge", opts.MaxAge}, {"MaxBackups", opts.MaxBackups}} {
		if o.value < 0 {
			return nil, fmt.Errorf("agentlog: %s %d is negative", o.name, o.value)
		}
	}
	loc := opts.Location
	if loc == nil {
		loc = time.Local
	}
	level := opts.Level
	if level == nil {
		level = MinLevel(0)
	}
	errw := opts.Errors
	if errw == nil {
		errw = os.Stderr
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	out := &output{
		dir:        filepath.Join(opts.Dir, opts.Agent),
		loc:        loc,
		maxSizeMB:  opts.MaxSizeMB,
		maxAge:     opts.MaxAge,
		maxBackups: opts.MaxBackups,
		compress:   opts.Compress,
		also:       opts.Also,
		now:        now,
		report:     reporter{w: errw, now: now, agent: opts.Agent},
	}
	return &Handler{out: out, level: level}, nil
}

// validAgent reports whether agent is MasterAgent or a decimal number.
func validAgent(agent string) bool {
	if agent == MasterAgent {
		return true
	}
	if agent == "" {
		return false
	}
	for _, c := range []byte(agent) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Enabled reports whether level is at or above the handler's minimum level.
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// Handle writes r as one line to the file of r's local date, switching files (and removing files older than
// MaxAge days) when the date changes. It returns the errors of writing and of removing old files, which
// it also reports on Options.Errors (see there).
func (h *Handler) Handle(_ context.Context, r slog.Record) error {
	t := r.Time
	if t.IsZero() {
		t = h.out.now()
	}
	t = t.In(h.out.loc)

	status := h.status
	msg := make([]byte, 0, 2*len(r.Message)+len(h.attrs)+16*r.NumAttrs())
	msg = appendEscaped(msg, r.Message)
	msg = append(msg, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		msg = appendAttr(msg, h.prefix, true, a, &status)
		return true
	})
	if status == "" {
		status = DefaultStatus
	}

	line := make([]byte, 0, len(dateTimeLayout)+len(status)+len(msg)+3)
	line = t.AppendFormat(line, dateTimeLayout)
	line = append(line, '|')
	line = appendStatus(line, status)
	line = append(line, '|')
	line = append(line, msg...)
	line = append(line, '\n')
	return h.out.write(t, line)
}

// WithAttrs returns a handler that adds attrs to every record, within the groups opened so far. A StatusKey
// attribute among attrs sets the status of its records unless a record gives its own.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	h2 := *h
	status := h.status
	buf := append([]byte(nil), h.attrs...)
	for _, a := range attrs {
		buf = appendAttr(buf, h.prefix, true, a, &status)
	}
	h2.attrs = buf
	h2.status = status
	return &h2
}

// WithGroup returns a handler that qualifies the keys of later attributes with name and a dot; an empty name
// returns h.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.prefix = h.prefix + name + "."
	return &h2
}

// Close closes the current file. Later records fail with ErrClosed; closing again does nothing.
func (h *Handler) Close() error {
	return h.out.close()
}

// Open opens (creating it and its folder) the file of the current day at once rather than with the first
// record, so that a log that cannot be written shows at start, also when no record is due. A failure is
// reported on Options.Errors like a failed write, and returned.
func (h *Handler) Open() error {
	return h.out.write(h.out.now().In(h.out.loc), nil)
}

// Reopen closes the current file so that the next record opens its day's file again, creating it if it was
// moved away: call it on SIGHUP after an external log rotation.
func (h *Handler) Reopen() error {
	return h.out.reopen()
}
