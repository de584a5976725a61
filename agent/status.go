package agent

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/pgjobs/pgjobs/internal/metrics"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// State is where a database agent stands.
type State string

// The states of a database agent.
const (
	StateStarting    State = "starting"    // not connected yet
	StateConnected   State = "connected"   // connected, checking the server or looking at the lead
	StateActive      State = "active"      // it leads the database: its jobs and tasks run here
	StateStandingBy  State = "standing by" // another agent leads the database and answers; this one waits
	StateTakingOver  State = "taking over" // it took the lead from another agent and starts its term
	StateUnavailable State = "unavailable" // the database cannot be served: Reason says why
	StateStopping    State = "stopping"    // stopping softly: its runs finish
)

// DatabaseStatus is how a database agent stands.
type DatabaseStatus struct {
	ID       int
	Database string    // the database's name
	State    State     // where it stands
	Since    time.Time // since when
	// Reason says why it is unavailable (the last error), or what it waits for; "" when nothing.
	Reason string
}

// Ready reports whether the database is served: the agent is active, or stands by behind a live
// leader (which it would replace within the leader timeout if it stopped answering).
func (s DatabaseStatus) Ready() bool { return s.State == StateActive || s.State == StateStandingBy }

// up reports whether the agent has a session on its database in state s.
func (s State) up() bool {
	return s == StateConnected || s == StateActive || s == StateStandingBy || s == StateTakingOver
}

// statusBoard holds a database agent's status, read by the master for /readyz.
type statusBoard struct {
	mu sync.Mutex
	s  DatabaseStatus
}

// setState records that the agent is now in state, for reason; the metrics follow.
func (a *dbAgent) setState(state State, reason string) {
	a.status.mu.Lock()
	if a.status.s.State != state {
		a.status.s.Since = a.opt.Clock.Now()
	}
	a.status.s.State, a.status.s.Reason = state, reason
	a.status.mu.Unlock()
	a.metrics.State(state.up(), state == StateActive, state == StateStandingBy)
}

// currentStatus returns the agent's status.
func (a *dbAgent) currentStatus() DatabaseStatus {
	a.status.mu.Lock()
	defer a.status.mu.Unlock()
	return a.status.s
}

// Status returns the status of each configured database agent, by id, and whether the master
// serves them: false before the first Apply, and once it stops (then the agents are those it
// stops, StateStopping once they know).
func (m *Master) Status() (databases []DatabaseStatus, serving bool) {
	m.mu.Lock()
	agents := m.stopping
	if !m.stopped {
		agents = nil
		for _, ra := range m.agents {
			agents = append(agents, ra)
		}
	}
	out := make([]DatabaseStatus, 0, len(agents))
	for _, ra := range agents {
		out = append(out, ra.agent.currentStatus())
	}
	serving = m.applied && !m.stopped
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b DatabaseStatus) int { return a.ID - b.ID })
	return out, serving
}

// Sessions returns the session budget of each server, for the metrics.
func (m *Master) Sessions() []metrics.Sessions {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]metrics.Sessions, 0, len(m.budgets))
	for server, b := range m.budgets {
		size, inUse, waiting := b.Use()
		out = append(out, metrics.Sessions{Server: server, Budget: size, InUse: inUse, Waiting: waiting})
	}
	slices.SortFunc(out, func(a, b metrics.Sessions) int {
		if a.Server < b.Server {
			return -1
		}
		return 1
	})
	return out
}

// Tasks reads the task counts of each database this agent leads, for the metrics.
func (m *Master) Tasks(ctx context.Context) []metrics.Tasks {
	m.mu.Lock()
	var active []*dbAgent
	for _, ra := range m.agents {
		if ra.agent.currentStatus().State == StateActive {
			active = append(active, ra.agent)
		}
	}
	m.mu.Unlock()
	out := make([]metrics.Tasks, len(active))
	var reads sync.WaitGroup
	for i, a := range active {
		reads.Go(func() { out[i] = a.taskCounts(ctx) }) // at once: a slow database delays no other
	}
	reads.Wait()
	slices.SortFunc(out, func(a, b metrics.Tasks) int { return a.ID - b.ID })
	return out
}

// taskCounts reads the database's tasks by group and state.
func (a *dbAgent) taskCounts(ctx context.Context) metrics.Tasks {
	t := metrics.Tasks{ID: a.db.ID, Database: a.db.name()}
	records, err := a.recordsPool()
	if err == nil {
		var counts []sqlschema.TaskGroupCount
		counts, t.OldestWaiting, err = sqlschema.TaskGroupCounts(ctx, records)
		for _, c := range counts {
			t.Groups = append(t.Groups, metrics.TaskGroup{Group: c.Group, State: c.State, Count: c.Count})
		}
	}
	t.Err = err
	return t
}
