package main

// The floor under the start offsets: the runs' own statements sent by a bare client with no
// scheduling, in bursts like the agent's minutes, so that the agent's figure can be read against
// what the machine allows at the same hour.

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

// floorGap is how long the floor's sessions idle before each burst: cold, as the agent's are at
// its minutes, without taking a minute each.
const floorGap = 10 * time.Second

// floorResult is what floorBursts measures.
type floorResult struct {
	offsets  []float64   // how late each run's call started after its burst began, in ms
	byBurst  [][]float64 // the offsets of each burst
	sessions int         // the sessions of each database
}

// floorDB is one database of the floor's bursts: its jobs' calls, a session to read the bursts,
// and the sessions that send the runs.
type floorDB struct {
	name    string
	admin   *pgx.Conn
	calls   []string
	ownerID string // the jobs' owner, as the guard's arguments
	owner   string
	runs    []*pgx.Conn
}

// floorBurstLimit bounds one burst: a server that stops answering ends the measurement.
const floorBurstLimit = time.Minute

// floorBursts sends, `bursts` times, one run of each job of dbs at once, each its guard, its call
// and the session's reset in one write, as the agent sends them. Each database has its share of
// the sessions the agent lets start at once, rounded up (2 in each of 10 databases, 20 in all,
// where the agent lends at most 16 starting at once, moving them between the databases), each
// session taking the next run of its database as soon as its last has ended.
func floorBursts(ctx context.Context, cluster *pgtest.Cluster, dbs []string, bursts int) (floorResult, error) {
	starting := agentOptions.StartingMax
	if starting <= 0 {
		starting = sessions.DefaultStartingMax()
	}
	r := floorResult{sessions: (starting + len(dbs) - 1) / len(dbs)}
	var fdbs []*floorDB
	defer func() {
		for _, d := range fdbs {
			d.admin.Close(ctx)
			for _, c := range d.runs {
				c.Close(ctx)
			}
		}
	}()
	for _, db := range dbs {
		d, err := openFloorDB(ctx, cluster.DSN(db), db, r.sessions)
		if d != nil {
			fdbs = append(fdbs, d)
		}
		if err != nil {
			return r, fmt.Errorf("floor: database %s: %w", db, err)
		}
	}
	for range bursts {
		time.Sleep(floorGap)
		burst, err := floorBurst(ctx, fdbs)
		if err != nil {
			return r, err
		}
		r.offsets = append(r.offsets, burst...)
		r.byBurst = append(r.byBurst, burst)
	}
	return r, nil
}

// floorBurst sends one run of each job of fdbs at once and returns how late each run's call started
// after the burst began, in ms.
func floorBurst(ctx context.Context, fdbs []*floorDB) ([]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, floorBurstLimit)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	began := time.Now()
	for _, d := range fdbs {
		next := make(chan string, len(d.calls))
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
						errs = append(errs, fmt.Errorf("floor: database %s: run %s: %w", d.name, call, err))
						mu.Unlock()
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var burst []float64
	for _, d := range fdbs {
		// The calls' own rows of this burst: those of the agent's minutes came before it.
		rows, _ := d.admin.Query(ctx, "SELECT extract(epoch FROM at - $1::timestamptz)::float8 * 1000 FROM bench_hits WHERE at >= $1", began)
		offsets, err := pgx.CollectRows(rows, pgx.RowTo[float64])
		if err != nil {
			return nil, fmt.Errorf("floor: database %s: read the burst's rows: %w", d.name, err)
		}
		if len(offsets) != len(d.calls) {
			return nil, fmt.Errorf("floor: database %s: %d runs sent, %d rows written", d.name, len(d.calls), len(offsets))
		}
		burst = append(burst, offsets...)
	}
	return burst, nil
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
	rows, _ := admin.Query(ctx, "SELECT jobfunction FROM pgjobs.pgj_job_ WHERE jobownerid = $1 ORDER BY jobid", ownerID)
	if d.calls, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return d, fmt.Errorf("the jobs' calls: %w", err)
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
func (d *floorDB) run(ctx context.Context, conn *pgconn.PgConn, call string) error {
	fe := conn.Frontend()
	fe.Send(&pgproto3.Parse{Query: sqlschema.RunGuardSQL()})
	fe.Send(&pgproto3.Bind{Parameters: [][]byte{[]byte(d.ownerID), []byte(d.owner)}})
	fe.Send(&pgproto3.Execute{})
	fe.Send(&pgproto3.Parse{Query: jobs.CallSQL(call)})
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
