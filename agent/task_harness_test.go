package agent_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent"
)

// taskDB is an enabled database served by an agent on the real clock, with an ordinary LOGIN role
// that inserts the tasks.
type taskDB struct {
	testDB
	role  string
	as    *pgxpool.Pool // sessions of role
	su    *pgxpool.Pool // sessions of the superuser
	ended *endedTasks
}

// endedTasks tells of the writes of task starts and ends the agent reports (Options.OnTasksWritten).
type endedTasks struct {
	mu      sync.Mutex
	changed chan struct{}
}

func (e *endedTasks) report(int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *endedTasks) next() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

// newTaskDB starts an agent on a new database, with configure applied to its options.
func newTaskDB(t *testing.T, configure func(*agent.Options)) taskDB {
	t.Helper()
	db := newTestDB(t)
	role := cluster.NewRole(t, "alice", db.name)
	ended := &endedTasks{changed: make(chan struct{})}
	startAgentWith(t, agent.RealClock{}, func(o *agent.Options) {
		o.Start = time.Time{}
		o.OnTasksWritten = ended.report
		if configure != nil {
			configure(o)
		}
	}, db)
	return taskDB{testDB: db, role: role, as: newPool(t, db.name, role), su: newPool(t, db.name, ""), ended: ended}
}

// newPool returns a pool of sessions on database as role ("": the cluster's superuser), closed
// when the test ends.
func newPool(t *testing.T, database, role string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(cluster.DSN(database))
	if err != nil {
		t.Fatal(err)
	}
	if role != "" {
		cfg.ConnConfig.User = role
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// insert inserts a task as the database's role and returns its id; columns and values are the
// INSERT's lists.
func (d taskDB) insert(t *testing.T, columns string, values ...any) int64 {
	t.Helper()
	params := ""
	for i := range values {
		if i > 0 {
			params += ", "
		}
		params += fmt.Sprintf("$%d", i+1)
	}
	var id int64
	if err := d.as.QueryRow(context.Background(), fmt.Sprintf("INSERT INTO task (%s) VALUES (%s) RETURNING id", columns, params), values...).Scan(&id); err != nil {
		t.Fatalf("insert task (%s): %v", columns, err)
	}
	return id
}

// taskRow is what a test reads back of a task.
type taskRow struct {
	State         string
	Output, Error *string
	Attempt       int
	PID           *int32
	Start, Stop   *time.Time
	Plan          time.Time
	Parent        *int64
}

// row returns task id as the superuser sees it; ok false when it is gone.
func (d taskDB) row(t *testing.T, id int64) (taskRow, bool) {
	t.Helper()
	var r taskRow
	err := d.su.QueryRow(context.Background(), "SELECT state::text, output, error, attempt, pid, start, stop, plan, parent FROM pgjobs.task WHERE id = $1", id).
		Scan(&r.State, &r.Output, &r.Error, &r.Attempt, &r.PID, &r.Start, &r.Stop, &r.Plan, &r.Parent)
	if err == pgx.ErrNoRows {
		return r, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, true
}

// waitTask waits until task id is in one of states (or gone, when states has "gone"), and returns it.
func (d taskDB) waitTask(t *testing.T, id int64, timeout time.Duration, states ...string) taskRow {
	t.Helper()
	deadline := time.After(timeout)
	for {
		changed := d.ended.next()
		r, ok := d.row(t, id)
		for _, s := range states {
			if (ok && r.State == s) || (!ok && s == "gone") {
				return r
			}
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("task %d: %+v (exists %v) after %s, want a state of %v", id, r, ok, timeout, states)
		}
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
