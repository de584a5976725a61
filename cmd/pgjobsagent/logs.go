package main

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"

	"github.com/pgjobs/pgjobs/agent/agentlog"
)

// logFiles are the log handlers of the master and the database agents, one per agent.
type logFiles struct {
	dir    string
	also   io.Writer // the terminal of --foreground, or nil: each line there after its agent's name and a |
	errors io.Writer // where the handlers report the failures of their files

	mu       sync.Mutex
	levels   map[string]*slog.LevelVar
	handlers map[string]*agentlog.Handler
}

// logger returns the logger of an agent ("master" or a database id) at a log level; asked again,
// it returns a logger of the same files and sets the new level. A new logger opens its file at once,
// so that a log that cannot be written is reported on l.errors at start; its handler reports later
// failures there too (at most once a minute) and keeps trying, so the log resumes once it is fixed.
func (l *logFiles) logger(name string, level int) (*slog.Logger, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h, ok := l.handlers[name]; ok {
		l.levels[name].Set(agentlog.MinLevel(level))
		return slog.New(h), nil
	}
	lv := &slog.LevelVar{}
	lv.Set(agentlog.MinLevel(level))
	var also io.Writer
	if l.also != nil { // the terminal's copy names the agent: the databases' lines interleave there
		also = prefixWriter{l.also, name + "|"}
	}
	h, err := agentlog.New(agentlog.Options{Dir: l.dir, Agent: name, Level: lv, Also: also, MaxAge: 30, Errors: l.errors})
	if err != nil {
		return nil, fmt.Errorf("log files of agent %s in %s: %w", name, filepath.Clean(l.dir), err)
	}
	_ = h.Open() // a failure is reported on l.errors by the handler, which keeps trying with each record
	l.levels[name], l.handlers[name] = lv, h
	return slog.New(h), nil
}

func (l *logFiles) setLevel(name string, level int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if lv, ok := l.levels[name]; ok {
		lv.Set(agentlog.MinLevel(level))
	}
}

// reopen closes every log file, so that the next line opens it anew (after external rotation).
// A failure is reported on errw: the log itself may be what failed.
func (l *logFiles) reopen(errw io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, h := range l.handlers {
		if err := h.Reopen(); err != nil {
			fmt.Fprintf(errw, "pgjobsagent: reopen the log of agent %s: %v\n", name, err)
		}
	}
}

func (l *logFiles) close(errw io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, h := range l.handlers {
		if err := h.Close(); err != nil {
			fmt.Fprintf(errw, "pgjobsagent: close the log of agent %s: %v\n", name, err)
		}
	}
}

// prefixWriter writes prefix before each Write's bytes, in one Write: for one-line reports.
type prefixWriter struct {
	w      io.Writer
	prefix string
}

func (p prefixWriter) Write(b []byte) (int, error) {
	if _, err := p.w.Write(append([]byte(p.prefix), b...)); err != nil {
		return 0, err
	}
	return len(b), nil
}
