package config

import (
	"fmt"
	"strings"
)

// File is a parsed pgjobs.conf: its settings and its lines as they were read, so that Bytes writes back
// comments, blank lines and line order verbatim. The mutators edit it in place: an edited line keeps its
// leading blanks and its trailing comment, a new line is appended at the end, and every other line stays
// byte for byte; a mutator that returns an error changes nothing. The zero value is an empty file without
// a path. A File is not safe for concurrent use.
type File struct {
	path  string
	lines []line
	noEOL bool // the last line has no '\n'
}

// Path returns the path the file was parsed or loaded as.
func (f *File) Path() string { return f.path }

// System returns the installed pgjobs version the file records, or "" when it has no system line.
func (f *File) System() string {
	if i := f.find(kindSystem); i >= 0 {
		return f.lines[i].system
	}
	return ""
}

// Master returns the master agent's log level, 0 when the file has no master line.
func (f *File) Master() LogLevel {
	if i := f.find(kindMaster); i >= 0 {
		return f.lines[i].master
	}
	return 0
}

// Sessions returns the most sessions the agent opens on each server (host and port), for all its
// databases there; 0 when the file has no sessions line, which leaves it to the agent (half the
// connections the server accepts from ordinary roles).
func (f *File) Sessions() int {
	if i := f.find(kindSessions); i >= 0 {
		return f.lines[i].sessions
	}
	return 0
}

// MinSessions and MaxSessions bound the sessions setting: an agent needs at least its leader
// session, its two history sessions and one for runs on a server.
const (
	MinSessions = 4
	MaxSessions = 100000
)

// ScramIterations returns the most SCRAM iterations the agent computes to log in as a job's or
// task's owner, or to a remote task's server; 0 when the file has no scram_iterations line, which
// leaves it to the agent (authwatch.DefaultMaxIterations, four times PostgreSQL's default).
func (f *File) ScramIterations() int {
	if i := f.find(kindScramIterations); i >= 0 {
		return f.lines[i].iterations
	}
	return 0
}

// MaxScramIterations is the highest scram_iterations the file may set, the bound of the agent's
// driver (authwatch.MaxIterationsLimit).
const MaxScramIterations = 10_000_000

// Databases returns the database rows in file order.
func (f *File) Databases() []Database {
	var dbs []Database
	for _, l := range f.lines {
		if l.kind == kindDatabase {
			dbs = append(dbs, l.db)
		}
	}
	return dbs
}

// Database returns the row for a host, port and database name, compared by resolved values: host and
// port may be Default or "" (which means Default), so "", "default" and "localhost" are the same host.
func (f *File) Database(host, port, name string) (Database, bool) {
	want := Database{Host: host, Port: port, Name: name}.key()
	for _, l := range f.lines {
		if l.kind == kindDatabase && l.db.key() == want {
			return l.db, true
		}
	}
	return Database{}, false
}

// Bytes returns the file's contents.
func (f *File) Bytes() []byte {
	var b strings.Builder
	for i, l := range f.lines {
		b.WriteString(l.text)
		if i < len(f.lines)-1 || !f.noEOL {
			b.WriteByte('\n')
		}
	}
	return []byte(b.String())
}

// SetSystem sets the installed version, e.g. "0.00": numbers separated by dots.
func (f *File) SetSystem(version string) error {
	if err := checkVersion(version); err != nil {
		return fmt.Errorf("set system: %w", err)
	}
	if err := f.set(f.find(kindSystem), "system="+version); err != nil {
		return fmt.Errorf("set system: %w", err)
	}
	return nil
}

// SetMaster sets the master agent's log level.
func (f *File) SetMaster(level LogLevel) error {
	if !level.Valid() {
		return fmt.Errorf("set master: master loglevel \"%d\" is out of range 0..%d", level, MaxLogLevel)
	}
	if err := f.set(f.find(kindMaster), "master="+level.String()); err != nil {
		return fmt.Errorf("set master: %w", err)
	}
	return nil
}

// AddDatabase appends a row for d and returns it as written. An empty Host, Port or User becomes
// Default and an empty Notification or Recipient None. When d.ID is 0 the row gets the highest id of the
// file plus one (1 for the first row). AddDatabase refuses an id, or a resolved host, port and database
// name, that the file already has, with an error wrapping ErrExists.
func (f *File) AddDatabase(d Database) (Database, error) {
	d = d.withDefaults()
	if err := d.validate(d.ID != 0); err != nil {
		return Database{}, fmt.Errorf("add database: %w", err)
	}
	if d.ID == 0 {
		highest := 0
		for _, l := range f.lines {
			if l.kind == kindDatabase {
				highest = max(highest, l.db.ID)
			}
		}
		if highest == MaxID {
			return Database{}, fmt.Errorf("add database: no id left (%d is taken)", MaxID)
		}
		d.ID = highest + 1
	} else if i := f.findID(d.ID); i >= 0 {
		return Database{}, fmt.Errorf("add database: id %d is %w (line %d)", d.ID, ErrExists, i+1)
	}
	if err := f.checkTarget(d, -1); err != nil {
		return Database{}, fmt.Errorf("add database: %w", err)
	}
	if err := f.set(-1, d.Line()); err != nil {
		return Database{}, fmt.Errorf("add database: %w", err)
	}
	return d, nil
}

// UpdateDatabase replaces the row of database id with d, filling empty fields as AddDatabase does. d.ID
// must be 0 or id. It refuses an id the file does not have (wrapping ErrNotConfigured) and a resolved
// host, port and database name that another row has (wrapping ErrExists).
func (f *File) UpdateDatabase(id int, d Database) error {
	i := f.findID(id)
	if i < 0 {
		return fmt.Errorf("update database id %d: %w", id, ErrNotConfigured)
	}
	if d.ID != 0 && d.ID != id {
		return fmt.Errorf("update database id %d: cannot change the id to %d", id, d.ID)
	}
	d.ID = id
	d = d.withDefaults()
	if err := d.validate(true); err != nil {
		return fmt.Errorf("update database id %d: %w", id, err)
	}
	if err := f.checkTarget(d, i); err != nil {
		return fmt.Errorf("update database id %d: %w", id, err)
	}
	if err := f.set(i, d.Line()); err != nil {
		return fmt.Errorf("update database id %d: %w", id, err)
	}
	return nil
}

// RemoveDatabase deletes the line of database id, with its trailing comment; comment lines above it stay.
// It refuses an id the file does not have, with an error wrapping ErrNotConfigured.
func (f *File) RemoveDatabase(id int) error {
	i := f.findID(id)
	if i < 0 {
		return fmt.Errorf("remove database id %d: %w", id, ErrNotConfigured)
	}
	f.lines = append(f.lines[:i:i], f.lines[i+1:]...)
	if i == len(f.lines) {
		f.noEOL = false // the line before keeps its '\n'
	}
	return nil
}

// find returns the index of the first line of kind k, or -1.
func (f *File) find(k lineKind) int {
	for i, l := range f.lines {
		if l.kind == k {
			return i
		}
	}
	return -1
}

// findID returns the index of the row of database id, or -1.
func (f *File) findID(id int) int {
	for i, l := range f.lines {
		if l.kind == kindDatabase && l.db.ID == id {
			return i
		}
	}
	return -1
}

// checkTarget refuses d when a row other than line index skip has its target.
func (f *File) checkTarget(d Database, skip int) error {
	k := d.key()
	for i, l := range f.lines {
		if i != skip && l.kind == kindDatabase && l.db.key() == k {
			return errTarget(l.db, i+1)
		}
	}
	return nil
}

// sizeWith returns the length of Bytes after line index i is replaced with text, or after text is
// appended as a new line when i is -1.
func (f *File) sizeWith(i int, text string) int {
	size := 0
	for _, l := range f.lines {
		size += len(l.text) + 1
	}
	if f.noEOL && len(f.lines) > 0 {
		size--
	}
	if i >= 0 {
		return size - len(f.lines[i].text) + len(text)
	}
	if f.noEOL && len(f.lines) > 0 {
		size++ // the last line gets its '\n'
	}
	return size + len(text) + 1
}

// set replaces the setting of line index i with setting, keeping the line's blanks and comment, or appends
// setting as a new line when i is -1. The setting is parsed again so that the file always stays valid.
func (f *File) set(i int, setting string) error {
	var text string
	if i < 0 {
		text = setting
		if n := len(f.lines); n > 0 && strings.HasSuffix(f.lines[n-1].text, "\r") {
			text += "\r" // keep the file's CRLF line ends
		}
	} else {
		old := f.lines[i]
		text = old.text[:old.start] + setting + old.text[old.end:]
	}
	if len(text) > MaxLineLength {
		return fmt.Errorf("the line would have %d bytes, more than the limit of %d", len(text), MaxLineLength)
	}
	if size := f.sizeWith(i, text); size > MaxFileSize {
		return fmt.Errorf("the file would have %d bytes, more than the limit of %d", size, MaxFileSize)
	}
	l, err := parseLine(text)
	if err != nil {
		return fmt.Errorf("line %s: %w", quote(text), err)
	}
	if i >= 0 {
		f.lines[i] = l
		return nil
	}
	f.lines = append(f.lines, l)
	f.noEOL = false
	return nil
}
