// Package agent runs pgjobs jobs: a master agent with one database agent per enabled database,
// each sleeping until its nearest job fires.
package agent

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/internal/metrics"
)

// Database is one database the agent serves, as the configuration names it.
type Database struct {
	// ID identifies the database agent: its log folder and application_name.
	ID int
	// DSN is a libpq keyword/value connection string for the agent's own sessions: host, port,
	// dbname and user (passwords come from PGPASSWORD, ~/.pgpass or a service file).
	DSN string
	// LogLevel is the database agent's log level, 0..5.
	LogLevel int
	// Name is the database's name, for the metrics and the status; "" means the DSN's dbname.
	Name string
}

// Options are the settings shared by all database agents.
type Options struct {
	// Clock tells the time; nil means the system clock.
	Clock Clock
	// Location is the zone schedules are read in; nil means time.Local.
	Location *time.Location
	// Start is the agent's start, the anchor of interval schedules; zero means Clock.Now() at Start.
	Start time.Time
	// Name identifies this agent process in the run history, such as "host pid 1234".
	Name string
	// MaxRuns is how many runs of one database may go on at once; 0 means 32.
	MaxRuns int
	// TaskRuns is how many tasks of one database may run at once; 0 means 8. Their sessions come
	// from the same budget as the runs'.
	TaskRuns int
	// Sessions is the most sessions the agent opens on one server (host and port), for all its
	// database agents there: their leader and history sessions, and their runs' sessions, which
	// runs wait for in turns. 0 means half the connections the server accepts from ordinary roles
	// (max_connections minus the reserved ones), read when an agent connects.
	Sessions int
	// ScramIterations is the most SCRAM iterations the agent computes to log in as a job's or
	// task's owner, or to a remote task's server: the count is the one of the role's password
	// verifier, which the role itself may set. 0 means authwatch.DefaultMaxIterations.
	ScramIterations int
	// StartingMax is how many runs of one server may be starting at once (sessions.Budget); 0
	// means sessions.DefaultStartingMax.
	StartingMax int
	// RetryMin and RetryMax bound the pause between attempts to reach an unreachable database:
	// it doubles from RetryMin to RetryMax in each outage, but stays at most 5 s while the server
	// that answers is a standby in recovery, whose promotion the agent follows. 0 means 1 s and
	// 1 min.
	RetryMin, RetryMax time.Duration
	// Logger returns the logger of a database agent (by id and log level); nil discards logs.
	Logger func(id, level int) *slog.Logger
	// LeaderPing is how often a standby asks the active agent to answer, and LeaderTimeout how
	// long the active agent may leave it unanswered before the standby takes the lead from it
	// (ending its session); it must be several times 1 s, the leader's coalescing of pings. 0 means
	// 2 s and 8 s: a hung leader is replaced within 12 s.
	LeaderPing, LeaderTimeout time.Duration
	// LeaderBusyLimit is how long the active agent's loop may stay away from its wait (any one
	// statement of the agent ends within its statement_timeout) before the agent stops answering
	// the standbys, which then take over; 0 means 15 s.
	LeaderBusyLimit time.Duration
	// OnEvent, when not nil, is called on each change of a database agent's state (Event), with
	// the database's id: a hook for tests.
	OnEvent func(id int, e Event)
	// OnTasksWritten, when not nil, is called after starts or ends of tasks were written, with the
	// database's id: a hook for tests.
	OnTasksWritten func(id int)
	// OnTasksClaimed, when not nil, is called after each claim of tasks with the database's id,
	// how long the claim took and how many tasks it claimed: a hook for the benchmark.
	OnTasksClaimed func(id int, took time.Duration, claimed int)
	// Metrics, when not nil, counts what the database agents do; it must outlive the master.
	Metrics *metrics.Agent
	// OnReload, when not nil, is called after each reload of a database agent's jobs on a change
	// notification, with the database's id: a hook for tests.
	OnReload func(id int)
	// CallViewsGrace is how long after a change the views of former calls that no job uses are
	// dropped (a run of a job loaded before the change may still start on its old view until the
	// reload that brings the change); 0 means 1 min.
	CallViewsGrace time.Duration
	// OnCallViewsDropped, when not nil, is called after each drop of the views of former calls,
	// with the database's id and how many were dropped: a hook for tests.
	OnCallViewsDropped func(id, dropped int)
}

func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = RealClock{}
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Start.IsZero() {
		o.Start = o.Clock.Now()
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = 32
	}
	if o.TaskRuns <= 0 {
		o.TaskRuns = 8
	}
	if o.RetryMin <= 0 {
		o.RetryMin = time.Second
	}
	if o.RetryMax <= 0 {
		o.RetryMax = time.Minute
	}
	if o.LeaderPing <= 0 {
		o.LeaderPing = 2 * time.Second
	}
	if o.LeaderTimeout <= 0 {
		o.LeaderTimeout = 8 * time.Second
	}
	if o.LeaderBusyLimit <= 0 {
		o.LeaderBusyLimit = 15 * time.Second
	}
	if o.CallViewsGrace <= 0 {
		o.CallViewsGrace = time.Minute
	}
	if o.Logger == nil {
		o.Logger = func(int, int) *slog.Logger { return slog.New(slog.DiscardHandler) }
	}
	return o
}

// applicationName is the application_name of a database agent's sessions.
func applicationName(id int) string { return fmt.Sprintf("pgjobsagent %d", id) }

// name returns the database's name: Name, else the DSN's dbname, else the DSN.
func (d Database) name() string {
	if d.Name != "" {
		return d.Name
	}
	if cfg, err := pgconn.ParseConfig(d.DSN); err == nil && cfg.Database != "" {
		return cfg.Database
	}
	return d.DSN
}
