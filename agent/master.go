package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/agent/sessions"
)

// Master runs one database agent per configured database and applies configuration changes.
type Master struct {
	opt Options
	log *slog.Logger

	runCtx    context.Context    // runs are cancelled when it ends
	cancelRun context.CancelFunc // hard stop

	mu       sync.Mutex
	budgets  map[string]*sessions.Budget // by server: host and port, as the DSN names them
	agents   map[int]*runningAgent       // by database id
	draining []*runningAgent             // stopped by a reload, their runs finishing
	stopped  bool
	stopping []*runningAgent // the agents Stop stops, which Status shows as they stop
	applied  bool            // Apply was called: the configured agents run
	// scramIterations is Options.ScramIterations as it stands, read by every database agent.
	scramIterations *atomic.Int64
}

// runningAgent is a database agent and how to stop it.
type runningAgent struct {
	db     Database
	agent  *dbAgent
	cancel context.CancelFunc // soft stop: no new runs
	done   chan struct{}      // closed when the agent and its runs have ended
}

// NewMaster returns a master agent that logs to log. It starts nothing until Apply.
func NewMaster(opt Options, log *slog.Logger) *Master {
	opt = opt.withDefaults()
	runCtx, cancelRun := context.WithCancel(context.Background())
	scram := new(atomic.Int64)
	scram.Store(int64(opt.ScramIterations))
	return &Master{opt: opt, log: log, runCtx: runCtx, cancelRun: cancelRun, agents: map[int]*runningAgent{}, budgets: map[string]*sessions.Budget{}, scramIterations: scram}
}

// Apply makes the running database agents those of dbs: it starts the added ones, stops the
// removed ones (their runs finish) and replaces those whose connection changed. A change of log
// level alone is applied in place. Apply does not wait for runs: a replaced agent drains while its
// successor waits for the leader lease, which the old one holds until its runs have ended.
func (m *Master) Apply(dbs []Database) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	m.applied = true
	want := map[int]Database{}
	for _, db := range dbs {
		want[db.ID] = db
	}
	for id, ra := range m.agents {
		db, keep := want[id]
		switch {
		case !keep:
			m.log.Log(context.Background(), agentlog.LevelEssential, "database agent removed from the configuration", "status", "reloading", "id", id)
			m.drain(ra)
			delete(m.agents, id)
			m.opt.Metrics.Forget(id)
		case db.DSN != ra.db.DSN || db.name() != ra.db.name():
			m.log.Log(context.Background(), agentlog.LevelEssential, "database agent's connection changed: replacing it", "status", "reloading", "id", id)
			m.drain(ra)
			delete(m.agents, id)
			m.opt.Metrics.Forget(id)
			m.start(db, ra.agent.startupDone.Load())
		case db.LogLevel != ra.db.LogLevel:
			m.opt.Logger(id, db.LogLevel) // the logger of id follows its new level
			ra.db.LogLevel = db.LogLevel
		}
	}
	for id, db := range want {
		if _, ok := m.agents[id]; !ok {
			m.start(db, false)
		}
	}
}

// drain stops an agent softly and keeps it until it has ended; m.mu is held.
func (m *Master) drain(ra *runningAgent) {
	ra.cancel()
	m.draining = append(m.draining, ra)
	go func() {
		<-ra.done
		m.mu.Lock()
		defer m.mu.Unlock()
		for i, d := range m.draining {
			if d == ra {
				m.draining = append(m.draining[:i], m.draining[i+1:]...)
				break
			}
		}
	}()
}

// start starts a database agent; m.mu is held.
func (m *Master) start(db Database, startupDone bool) {
	ctx, cancel := context.WithCancel(context.Background())
	server := serverOf(db.DSN)
	budget, ok := m.budgets[server]
	if !ok {
		budget = sessions.NewBudget(m.opt.Sessions)
		budget.StartingMax = m.opt.StartingMax
		m.budgets[server] = budget
	}
	a := newDBAgent(db, m.opt, m.runCtx, budget, m.scramIterations)
	a.startupDone.Store(startupDone)
	ra := &runningAgent{db: db, agent: a, cancel: cancel, done: make(chan struct{})}
	m.agents[db.ID] = ra
	m.log.Log(context.Background(), agentlog.LevelEssential, "database agent started", "status", "starting", "id", db.ID)
	go func() {
		defer close(ra.done)
		a.run(ctx)
	}()
}

// SetSessions sets the budget of sessions of every server, as Options.Sessions does; its database
// agents take it at once (sessions over it close as they are given back).
func (m *Master) SetSessions(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.opt.Sessions = n
	for _, b := range m.budgets {
		b.Configure(n)
	}
}

// SetScramIterations sets the most SCRAM iterations computed for a login, as
// Options.ScramIterations does; the database agents take it for the sessions they open next.
func (m *Master) SetScramIterations(n int) { m.scramIterations.Store(int64(n)) }

// serverOf names the server of a DSN by its hosts and ports; the DSN itself when it does not parse
// (its agent reports why when it connects).
func serverOf(dsn string) string {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return dsn
	}
	servers := []string{fmt.Sprintf("%s:%d", cfg.Host, cfg.Port)}
	for _, f := range cfg.Fallbacks { // also each host again without TLS, under sslmode=prefer
		if s := fmt.Sprintf("%s:%d", f.Host, f.Port); !slices.Contains(servers, s) {
			servers = append(servers, s)
		}
	}
	return strings.Join(servers, ",")
}

// Stop stops the agents softly: no new runs, and runs in flight may finish within grace (real
// time). Then they are cancelled (and recorded as cancelled). Stop returns when everything has
// ended; it is safe to call twice.
func (m *Master) Stop(grace time.Duration) {
	m.mu.Lock()
	m.stopped = true
	agents := append([]*runningAgent(nil), m.draining...)
	for _, ra := range m.agents {
		agents = append(agents, ra)
	}
	m.agents = map[int]*runningAgent{}
	m.stopping = agents
	m.mu.Unlock()
	for _, ra := range agents {
		ra.cancel()
	}
	timer := time.NewTimer(grace)
	defer timer.Stop()
	for _, ra := range agents {
		select {
		case <-ra.done:
		case <-timer.C:
			m.log.Log(context.Background(), agentlog.LevelEssential, "grace period over: cancelling the runs still going", "status", "stopping")
			m.cancelRun()
			<-ra.done
		}
	}
	m.cancelRun()
}

// Cancel cancels every run in flight at once: the second signal.
func (m *Master) Cancel() { m.cancelRun() }
