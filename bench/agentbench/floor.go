package main

// The floor under the start offsets: the runs' own statements sent by a bare client with no
// scheduling, in a burst 30 s after each of the agent's minutes, so that the agent's figure can be
// read against what the machine allows in the same minutes.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/pgjobs/pgjobs/agent/jobs"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/pgtest"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// floorAfter is when a burst of the floor is sent after each of the agent's minutes: half-way to
// the next, so that it meets the machine of that minute, not of another hour, and neither the
// agent's bookkeeping after its minute nor its claims and warming before the next. Its sessions,
// opened before the agent starts, idle about 30 s before the first burst and a minute before the
// others; each runs its first call in the first burst, as the agent's new sessions do at the first
// minute.
const floorAfter = 30 * time.Second

// floor is the bare client of the floor: the sessions of each database that send the bursts.
type floor struct {
	dbs      []*floorDB
	sessions int // the sessions of each database
}

// floorBurstResult is what one burst measures.
type floorBurstResult struct {
	offsets []float64     // how late each run's call started after the burst began, in ms
	began   time.Time     // the burst's first send
	cpu     cpuWindow     // the CPU time spent from cpuBefore before to cpuAfter after it began
	window  time.Duration // how long cpu's window lasted: longer than cpuBefore+cpuAfter when the burst was
}

// floorDB is one database of the floor's bursts: its jobs' calls, a session to read the bursts,
// and the sessions that send the runs.
type floorDB struct {
	name    string
	admin   *pgx.Conn
	calls   []floorCall
	ownerID string // the jobs' owner, as the guard's arguments
	owner   string
	runs    []*pgx.Conn
}

// floorCall is a job's call and what its guard is given.
type floorCall struct {
	call     string
	funcOID  uint32
	stored   sqlschema.StoredCall
	view     string // the view the call is bound to (schema version 15); "" for a call set before
	viewCall string // the statement that runs it
}

// openFloor opens the floor's sessions on dbs, whose jobs are made: each database has its share of
// the sessions the agent lets start at once, rounded up (2 in each of 10 databases, 20 in all, where
// the agent lends at most 16 starting at once, moving them between the databases).
func openFloor(ctx context.Context, cluster *pgtest.Cluster, dbs []string) (*floor, error) {
	starting := agentOptions.StartingMax
	if starting <= 0 {
		starting = sessions.DefaultStartingMax()
	}
	f := &floor{sessions: (starting + len(dbs) - 1) / len(dbs)}
	if err := floorFits(ctx, cluster, len(dbs)*(f.sessions+1)); err != nil {
		return nil, err
	}
	for _, db := range dbs {
		d, err := openFloorDB(ctx, cluster.DSN(db), db, f.sessions)
		if d != nil {
			f.dbs = append(f.dbs, d)
		}
		if err != nil {
			f.close(ctx)
			return nil, fmt.Errorf("floor: database %s: %w", db, err)
		}
	}
	return f, nil
}

// floorFits returns an error when the floor's n sessions, held through the agent's minutes, and the
// agent's budget would not leave the bench a few of the server's connections.
func floorFits(ctx context.Context, cluster *pgtest.Cluster, n int) error {
	conn, err := pgx.Connect(ctx, cluster.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	defer conn.Close(ctx)
	var maxConns, available int
	// As the agent reads it: the connections of ordinary roles (reserved_connections from 16 on).
	if err := conn.QueryRow(ctx, `SELECT current_setting('max_connections')::int,
		current_setting('max_connections')::int - current_setting('superuser_reserved_connections')::int
			- coalesce(nullif(current_setting('reserved_connections', true), '')::int, 0)`).Scan(&maxConns, &available); err != nil {
		return fmt.Errorf("floor: the server's connections: %w", err)
	}
	budget := agentOptions.Sessions
	if budget <= 0 {
		budget = sessions.DefaultShare(available)
	}
	const bench = 3 // the bench's own sessions: the one here, its reads of the results
	if n+budget+bench > maxConns {
		return fmt.Errorf("floor: its %d sessions and the agent's budget of %d do not fit in max_connections %d: lower -starting or -sessions", n, budget, maxConns)
	}
	return nil
}

// close closes the floor's sessions.
func (f *floor) close(ctx context.Context) {
	for _, d := range f.dbs {
		d.admin.Close(ctx)
		for _, c := range d.runs {
			c.Close(ctx)
		}
	}
}

// burst sends one run of each job at once, each its guard, its call and the session's reset in one
// write, as the agent sends them, each session taking the next run of its database as soon as its
// last has ended. It returns how late each run's call started after the burst began, and deletes
// the burst's rows, so that they are not read as runs of the agent's. A burst not done by deadline
// (the agent's next minute comes) ends the measurement.
func (f *floor) burst(ctx context.Context, deadline time.Time) (floorBurstResult, error) {
	var r floorBurstResult
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	before, err := sampleCPU()
	if err != nil {
		return r, err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	time.Sleep(cpuBefore)
	r.began = time.Now()
	for _, d := range f.dbs {
		next := make(chan floorCall, len(d.calls))
		for _, call := range d.calls {
			next <- call
		}
		close(next)
		for _, c := range d.runs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for call := range next {
					if err := d.run(ctx, c.PgConn(), call); err != nil {
						mu.Lock()
						errs = append(errs, fmt.Errorf("floor: database %s: run %s: %w", d.name, call.call, err))
						mu.Unlock()
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	ended := time.Now()
	if err := errors.Join(errs...); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("floor: the burst was not done by %s, before the agent's next minute: %w", deadline.Format(time.TimeOnly), err)
		}
		return r, err
	}
	// The burst's CPU window, as long as a minute's but for a burst that outlasts it, read before
	// the bench reads the rows.
	time.Sleep(time.Until(r.began.Add(cpuAfter)))
	after, err := sampleCPU()
	if err != nil {
		return r, err
	}
	r.cpu = cpuWindow{agent: after.process - before.process, machine: after.machine - before.machine}
	r.window = time.Since(r.began) + cpuBefore
	for _, d := range f.dbs {
		// Only the burst's rows: the agent's runs come at its minutes, outside [began, ended].
		rows, _ := d.admin.Query(ctx, "DELETE FROM bench_hits WHERE at >= $1 AND at <= $2 RETURNING extract(epoch FROM at - $1::timestamptz)::float8 * 1000", r.began, ended)
		offsets, err := pgx.CollectRows(rows, pgx.RowTo[float64])
		if err != nil {
			return r, fmt.Errorf("floor: database %s: read the burst's rows: %w", d.name, err)
		}
		if len(offsets) != len(d.calls) {
			return r, fmt.Errorf("floor: database %s: %d runs sent, %d rows written", d.name, len(d.calls), len(offsets))
		}
		r.offsets = append(r.offsets, offsets...)
	}
	return r, nil
}

// openFloorDB opens n sessions of database name for the floor's bursts, warmed as the agent warms
// its sessions (the guard compiled before the first burst), and reads its jobs' calls. A database
// returned with an error has sessions to close.
func openFloorDB(ctx context.Context, dsn, name string, n int) (*floorDB, error) {
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open a session: %w", err)
	}
	d := &floorDB{name: name, admin: admin}
	// The jobs are the bench role's (startOffsets makes them as it), read as the agent reads them.
	var ownerID uint32
	if err := admin.QueryRow(ctx, "SELECT oid, rolname FROM pg_roles WHERE rolname = current_user").Scan(&ownerID, &d.owner); err != nil {
		return d, fmt.Errorf("the jobs' owner: %w", err)
	}
	d.ownerID = strconv.FormatUint(uint64(ownerID), 10)
	rows, _ := admin.Query(ctx, "SELECT jobfunction, coalesce(jobfuncoid, 0), coalesce(jobview, '') FROM pgjobs.pgj_job_ WHERE jobownerid = $1 ORDER BY jobid", ownerID)
	if d.calls, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (c floorCall, err error) {
		return c, row.Scan(&c.call, &c.funcOID, &c.view)
	}); err != nil {
		return d, fmt.Errorf("the jobs' calls: %w", err)
	}
	for i, c := range d.calls {
		if c.view != "" {
			d.calls[i].viewCall, err = sqlschema.ViewCallSQL(c.view)
		} else {
			d.calls[i].stored, err = sqlschema.ParseStoredCall(c.call)
		}
		if err != nil {
			return d, fmt.Errorf("the jobs' calls: %w", err)
		}
	}
	for range n {
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			return d, fmt.Errorf("open a session: %w", err)
		}
		d.runs = append(d.runs, c)
		if err := sqlschema.RunGuardWarm(ctx, c); err != nil {
			return d, fmt.Errorf("warm a session: %w", err)
		}
	}
	return d, nil
}

// run sends one run of call on conn, as sessions.Session.Run sends it, and reads its answer up to
// the reset's end; it returns the server's first error.
func (d *floorDB) run(ctx context.Context, conn *pgconn.PgConn, call floorCall) error {
	fe := conn.Frontend()
	if call.view != "" {
		fe.Send(&pgproto3.Parse{Query: sqlschema.RunViewGuardSQL()})
		fe.Send(&pgproto3.Bind{Parameters: [][]byte{[]byte(d.ownerID), []byte(d.owner), []byte(call.view)}})
		fe.Send(&pgproto3.Execute{})
		fe.Send(&pgproto3.Parse{Query: call.viewCall})
	} else {
		fe.Send(&pgproto3.Parse{Query: sqlschema.RunGuardSQL()})
		fe.Send(&pgproto3.Bind{Parameters: [][]byte{[]byte(d.ownerID), []byte(d.owner), []byte(strconv.FormatUint(uint64(call.funcOID), 10)), []byte(call.stored.Schema), []byte(call.stored.Name), []byte(strconv.FormatBool(call.stored.Castable))}})
		fe.Send(&pgproto3.Execute{})
		fe.Send(&pgproto3.Parse{Query: jobs.CallSQL(call.call)})
	}
	fe.Send(&pgproto3.Bind{})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Sync{})
	fe.Send(&pgproto3.Query{String: sessions.ResetSQL()})
	if err := fe.Flush(); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	var first error
	for ready := 0; ready < 2; {
		msg, err := conn.ReceiveMessage(ctx)
		if err != nil {
			return fmt.Errorf("read the answer: %w", err)
		}
		switch m := msg.(type) {
		case *pgproto3.ErrorResponse:
			if first == nil {
				first = pgconn.ErrorResponseToPgError(m)
			}
		case *pgproto3.ReadyForQuery:
			ready++
		}
	}
	return first
}
