// Package jobs is the database agent's jobs service: it plans a database's jobs, claims their fires
// ahead, runs each on a session of its owner at its minute and records the run.
package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/clock"
	"github.com/pgjobs/pgjobs/internal/metrics"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// Config is what the jobs service of a database is given once, for all its terms.
type Config struct {
	Name     string         // the agent process, as the run history names it
	Clock    clock.Clock    // tells the time and makes the timers the schedules wait on
	Location *time.Location // the zone schedules are read in
	Log      *slog.Logger
	Budget   *sessions.Budget // the sessions of the database's server
	Owners   *sessions.Pool   // the sessions of the database's job owners, from Budget
	// Records returns the pool of the agent's own sessions on the database: run history, planning.
	Records  func() (*pgxpool.Pool, error)
	OnIdle   func() // if not nil, called when no job is planned and the service sleeps until a change
	OnReload func() // if not nil, called after each reload of the jobs on a change notification
	// OnRefused, if not nil, is called when the server refused a run's session: the run waits again.
	OnRefused func()
	// Metrics counts the runs and fires; nil counts nothing.
	Metrics *metrics.Database
}

// Term is what a leadership term gives the jobs service.
type Term struct {
	Epoch   int64         // the lead's: every claim carries it
	Records *pgxpool.Pool // the agent's own sessions
	// Stop is the agent's context: runs waiting for a session give up when it ends, not when the
	// term does.
	Stop      context.Context
	Changes   <-chan struct{} // the jobs changed (the pgjobs notification)
	Requests  <-chan struct{} // a run of a job was asked for by hand (the pgjobs_run notification)
	UpkeepDue chan<- struct{} // the service wakes the upkeep after its runs
	Reloaded  chan<- struct{} // and tells of each reload on a change (without waiting); nil: none
	// Progress is when the service's loop left its wait (Unix ns), 0 while it waits: the answers to
	// the standbys report on it.
	Progress   *atomic.Int64
	RunStartup bool          // the term is a start for the database: startup jobs run
	Anchor     time.Time     // the instant interval schedules count from
	LateLimit  time.Duration // how late a fire no agent could run in time may still run
	// Resumes is true when the term follows a term of this agent with no other agent between: the
	// fires that term claimed ahead and never fired are fired in this one.
	Resumes bool
}

// woke stops the loop's timer, if any, and marks the loop busy: it left its wait.
func (t Term) woke(timer clock.Timer) {
	t.Progress.Store(time.Now().UnixNano())
	if timer != nil {
		timer.Stop()
	}
}

// Service runs the jobs of one database. Its runs outlive the terms: they go on until the context
// given to New ends.
type Service struct {
	cfg    Config
	runCtx context.Context // runs are cancelled when it ends
	runs   sync.WaitGroup  // runs in flight, and their bookkeeping

	runningMu sync.Mutex
	running   map[int]*inFlight // jobs with a run waiting for a session or going on

	pendingMu sync.Mutex
	pending   []sqlschema.RunEnd // run ends not yet recorded: the database was unreachable
	recorder  recorder

	foreignBusy map[int]bool // the jobs of runs of other agents recorded as running; the loop's
	// claimed are the fires claimed ahead and not fired yet, by job; the loop's, kept from one term
	// to the next for Term.Resumes.
	claimed map[int]claim
}

// New returns the jobs service of a database; its runs are cancelled when runCtx ends.
func New(runCtx context.Context, cfg Config) *Service {
	return &Service{cfg: cfg, runCtx: runCtx, running: map[int]*inFlight{}, claimed: map[int]claim{}}
}

// Wait waits until the runs in flight have ended and been recorded.
func (s *Service) Wait() { s.runs.Wait() }

// logf logs at level, formatting the message only when the level is logged: at a busy minute a
// database agent at log level 0 formats none of its runs' lines.
func (s *Service) logf(level slog.Level, status, format string, args ...any) {
	if !s.cfg.Log.Enabled(context.Background(), level) {
		return
	}
	s.cfg.Log.Log(context.Background(), level, fmt.Sprintf(format, args...), "status", status)
}
