package agentlog

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"gopkg.in/natefinch/lumberjack.v2"
)

// dayLayout is the date in file names: YYYY.MM.DD.
const dayLayout = "2006.01.02"

// backupLayout is the timestamp lumberjack puts into the names of rotated pieces: DAY-2006-01-02T15-04-05.000.log.
const backupLayout = "2006-01-02T15-04-05.000"

// output is the writer shared by a Handler and the handlers derived from it.
type output struct {
	dir        string // Dir/Agent
	loc        *time.Location
	maxSizeMB  int
	maxAge     int
	maxBackups int
	compress   bool
	also       io.Writer
	now        func() time.Time

	mu     sync.Mutex
	report reporter           // failures of write, on Options.Errors
	day    string             // the date (dayLayout) of file
	file   *lumberjack.Logger // nil before the first record and after Close
	pruned string             // the latest date old files were removed for, "" if never
	closed bool
}

// write writes line, the record of time t (in o.loc), to the file of t's date and to o.also; an empty line
// only opens the file. A failure is reported on o.report and returned.
func (o *output) write(t time.Time, line []byte) error {
	day := t.Format(dayLayout)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	err := o.writeLocked(t, day, line)
	if err != nil {
		o.report.failed(err)
		return fmt.Errorf("agentlog: %w", err)
	}
	o.report.succeeded()
	return nil
}

// writeLocked does the work of write, under o.mu.
func (o *output) writeLocked(t time.Time, day string, line []byte) error {
	var errs []error
	if o.file == nil || day != o.day {
		if o.file != nil {
			if err := o.file.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", o.file.Filename, err))
			}
		}
		// Each lumberjack.Logger starts a goroutine on its first write that it never stops: one per day.
		o.file = &lumberjack.Logger{
			Filename:   filepath.Join(o.dir, day+".log"),
			MaxSize:    o.maxSizeMB,
			MaxBackups: o.maxBackups,
			Compress:   o.compress,
		}
		o.day = day
		if day > o.pruned {
			if err := o.prune(t); err != nil {
				errs = append(errs, err)
			}
			o.pruned = day
		}
	}
	if _, err := o.file.Write(line); err != nil {
		errs = append(errs, fmt.Errorf("write %s: %w", o.file.Filename, err))
	}
	if o.also != nil && len(line) > 0 {
		if _, err := o.also.Write(line); err != nil {
			errs = append(errs, fmt.Errorf("write copy of %s: %w", o.file.Filename, err))
		}
	}
	return errors.Join(errs...)
}

// prune removes from o.dir the day files and their rotated pieces whose date is more than o.maxAge days before
// the date of now; files whose names do not follow the layout are left alone.
func (o *output) prune(now time.Time) error {
	if o.maxAge <= 0 {
		return nil
	}
	y, m, d := now.Date()
	cutoff := time.Date(y, m, d-o.maxAge, 12, 0, 0, 0, now.Location()).Format(dayLayout)
	entries, err := os.ReadDir(o.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // the folder is created with the first file
	}
	if err != nil {
		return fmt.Errorf("remove old logs: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		day, ok := layoutDay(e.Name())
		if !ok || day >= cutoff {
			continue
		}
		if err := os.Remove(filepath.Join(o.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove old log: %w", err))
		}
	}
	return errors.Join(errs...)
}

// layoutDay returns the date of a file named by the layout: DAY.log, a rotated piece DAY-TIMESTAMP.log or a
// compressed one DAY-TIMESTAMP.log.gz, with DAY a valid YYYY.MM.DD and TIMESTAMP lumberjack's backup time.
func layoutDay(name string) (string, bool) {
	if len(name) < len(dayLayout) {
		return "", false
	}
	day, rest := name[:len(dayLayout)], name[len(dayLayout):]
	if _, err := time.Parse(dayLayout, day); err != nil {
		return "", false
	}
	if rest == ".log" {
		return day, true
	}
	ts, ok := strings.CutPrefix(rest, "-")
	if !ok {
		return "", false
	}
	if s, ok := strings.CutSuffix(ts, ".log.gz"); ok {
		ts = s
	} else if s, ok := strings.CutSuffix(ts, ".log"); ok {
		ts = s
	} else {
		return "", false
	}
	if _, err := time.Parse(backupLayout, ts); err != nil {
		return "", false
	}
	return day, true
}

// close closes the current file and marks o closed, after reporting the failures no report showed yet.
func (o *output) close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	o.report.flush()
	if o.file == nil {
		return nil
	}
	err := o.file.Close()
	name := o.file.Filename
	o.file = nil
	if err != nil {
		return fmt.Errorf("agentlog: close %s: %w", name, err)
	}
	return nil
}

// reopen closes the current file; the lumberjack.Logger opens (or creates) it again on the next write.
func (o *output) reopen() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	if o.file == nil {
		return nil
	}
	if err := o.file.Close(); err != nil {
		return fmt.Errorf("agentlog: reopen %s: %w", o.file.Filename, err)
	}
	return nil
}
