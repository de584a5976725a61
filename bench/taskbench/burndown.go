package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
)

// burnDown is what the burn-down of queued tasks by one agent measured.
type burnDown struct {
	tasks      int
	took       time.Duration
	peakConns  int     // the agent's sessions on the database at most
	statements float64 // statements the server ran per task (pg_stat_statements), the bench's own left out
	walBytes   float64 // WAL written per task
}

func (b burnDown) rate() float64 { return float64(b.tasks) / b.took.Seconds() }

// runAgent starts an agent on database db of the bench's cluster and returns its stop.
func (e *env) runAgent(db string, configure func(*agent.Options)) (stop func()) {
	opt := e.agentOptions
	opt.Name, opt.Location, opt.Start = "taskbench", time.UTC, time.Time{}
	if configure != nil {
		configure(&opt)
	}
	m := agent.NewMaster(opt, slog.New(slog.DiscardHandler))
	m.Apply([]agent.Database{{ID: 1, DSN: e.cluster.DSN(db)}})
	return func() { m.Stop(30 * time.Second) }
}

// queueTasks inserts n ready tasks as the bench's role, in batches, with the columns and values
// of each row given by the SELECT list row (over generate_series g).
func (e *env) queueTasks(ctx context.Context, db string, n int, row string) error {
	conn, err := e.connectAs(ctx, db, e.role)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	const batch = 20000
	for done := 0; done < n; done += batch {
		k := min(batch, n-done)
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO task (input, max, delete, "group", priority) SELECT %s FROM generate_series(1, %d) g`, row, k)); err != nil {
			return fmt.Errorf("queue %d tasks in %s: %w", n, db, err)
		}
	}
	return nil
}

// waitEnded waits until no task of db is waiting or running but those that never end (the
// saturating runs of a measurement: left), sampling the agent's sessions meanwhile.
func (e *env) waitEnded(ctx context.Context, db string, left int, timeout time.Duration) (peakConns int, err error) {
	conn, err := e.connect(ctx, db)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	deadline := time.Now().Add(timeout)
	for {
		var waiting, conns int
		err := conn.QueryRow(ctx, `/* taskbench */ SELECT (SELECT count(*) FROM pgjobs.task WHERE state IN ('PLAN', 'TAKE', 'WORK') AND plan <= now()),
			(SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend')`).Scan(&waiting, &conns)
		if err != nil {
			return peakConns, fmt.Errorf("count the tasks left in %s: %w", db, err)
		}
		peakConns = max(peakConns, conns)
		if waiting <= left {
			return peakConns, nil
		}
		if time.Now().After(deadline) {
			return peakConns, fmt.Errorf("%d tasks of %s still not ended after %s", waiting, db, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// measureBurnDown queues n no-op tasks (SELECT 1, output written back, delete off) in a new
// database, then starts an agent and times it until all have ended, with the statements and WAL
// the server spent on them.
func (e *env) measureBurnDown(ctx context.Context, n int) (burnDown, error) {
	db, err := e.newDatabase(ctx, "burn")
	if err != nil {
		return burnDown{}, err
	}
	if err := e.queueTasks(ctx, db, n, "'SELECT 1', 1000000, false, 'burn', 0"); err != nil {
		return burnDown{}, err
	}
	if err := e.exec(ctx, db, "VACUUM ANALYZE pgjobs.task"); err != nil {
		return burnDown{}, err
	}
	if err := e.exec(ctx, db, "SELECT pg_stat_statements_reset()"); err != nil {
		return burnDown{}, err
	}
	walBefore, err := e.walLSN(ctx, db)
	if err != nil {
		return burnDown{}, err
	}
	began := time.Now()
	stop := e.runAgent(db, nil)
	peak, err := e.waitEnded(ctx, db, 0, 30*time.Minute)
	took := time.Since(began)
	stop()
	if err != nil {
		return burnDown{}, err
	}
	r := burnDown{tasks: n, took: took, peakConns: peak}
	walAfter, err := e.walLSN(ctx, db)
	if err != nil {
		return r, err
	}
	r.walBytes = float64(walAfter-walBefore) / float64(n)
	var calls int64
	if err := e.queryRow(ctx, db, `/* taskbench */ SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
		WHERE d.datname = current_database() AND s.query NOT LIKE '%taskbench%' AND s.query NOT LIKE '%pg_stat_statements_reset%'`, &calls); err != nil {
		return r, err
	}
	r.statements = float64(calls) / float64(n)
	if e.top > 0 {
		if err := e.printTop(ctx, db); err != nil {
			return r, err
		}
	}
	return r, nil
}

// measureCeiling runs the minimal loop the burn-down is measured against, on conns sessions: each
// claims 100 rows with SKIP LOCKED, runs SELECT 1 for each, and marks them done, in one
// transaction, until no row is left.
func (e *env) measureCeiling(ctx context.Context, n, conns int) (time.Duration, error) {
	db, err := e.newDatabase(ctx, "ceiling")
	if err != nil {
		return 0, err
	}
	if err := e.exec(ctx, db, fmt.Sprintf(`CREATE TABLE queue (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, state text NOT NULL DEFAULT 'PLAN', input text NOT NULL, output text);
		CREATE INDEX queue_ready ON queue (id) WHERE state = 'PLAN';
		INSERT INTO queue (input) SELECT 'SELECT 1' FROM generate_series(1, %d)`, n)); err != nil {
		return 0, err
	}
	if err := e.exec(ctx, db, "VACUUM ANALYZE queue"); err != nil {
		return 0, err
	}
	sessions := make([]*pgx.Conn, conns)
	for i := range sessions {
		if sessions[i], err = e.connect(ctx, db); err != nil {
			return 0, err
		}
		defer sessions[i].Close(ctx)
	}
	began := time.Now()
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for _, conn := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n, err := ceilingRound(ctx, conn)
				if err != nil || n == 0 {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(began)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, fmt.Errorf("ceiling loop: %w", err)
		}
	}
	return took, nil
}

// ceilingRound is one transaction of the ceiling loop; it returns how many rows it worked.
func ceilingRound(ctx context.Context, conn *pgx.Conn) (int, error) {
	var worked int
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, "SELECT id, input FROM queue WHERE state = 'PLAN' ORDER BY id LIMIT 100 FOR UPDATE SKIP LOCKED")
		if err != nil {
			return err
		}
		var ids []int64
		var inputs []string
		var id int64
		var input string
		if _, err := pgx.ForEachRow(rows, []any{&id, &input}, func() error {
			ids, inputs = append(ids, id), append(inputs, input)
			return nil
		}); err != nil {
			return err
		}
		outputs := make([]string, len(ids))
		for i, input := range inputs {
			var v int
			if err := tx.QueryRow(ctx, input).Scan(&v); err != nil {
				return err
			}
			outputs[i] = fmt.Sprint(v)
		}
		worked = len(ids)
		if worked == 0 {
			return nil
		}
		_, err = tx.Exec(ctx, "UPDATE queue q SET state = 'DONE', output = u.output FROM unnest($1::bigint[], $2::text[]) u(id, output) WHERE q.id = u.id", ids, outputs)
		return err
	})
	return worked, err
}

// printTop prints the statements of db that took the server the most time (-top).
func (e *env) printTop(ctx context.Context, db string) error {
	conn, err := e.connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `/* taskbench */ SELECT calls, total_exec_time::numeric(12,1), left(regexp_replace(query, '\s+', ' ', 'g'), 110)
		FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = current_database()
		ORDER BY total_exec_time DESC LIMIT $1`, e.top)
	if err != nil {
		return err
	}
	var calls int64
	var total float64
	var query string
	_, err = pgx.ForEachRow(rows, []any{&calls, &total, &query}, func() error {
		fmt.Printf("  %9d calls %10.1f ms  %s\n", calls, total, query)
		return nil
	})
	return err
}
