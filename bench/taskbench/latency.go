package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
)

// written is poked by the agent after it wrote starts or ends of tasks (Options.OnTasksWritten).
type written struct{ c chan struct{} }

func (w written) poke(int) {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// reportLatency measures how soon tasks start: one at a time on an idle queue, under a steady
// 1,000 inserts/s, and planned ones against their plan.
func (e *env) reportLatency(ctx context.Context) error {
	db, err := e.newDatabase(ctx, "latency")
	if err != nil {
		return err
	}
	w := written{c: make(chan struct{}, 1)}
	stop := e.runAgent(db, func(o *agent.Options) { o.OnTasksWritten = w.poke })
	defer stop()
	conn, err := e.connectAs(ctx, db, e.role)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	idle, err := idleLatency(ctx, conn, w, 1000)
	if err != nil {
		return err
	}
	steady, err := e.steadyLatency(ctx, db, 1000, 10*time.Second)
	if err != nil {
		return err
	}
	planned, err := plannedLatency(ctx, conn, 1000)
	if err != nil {
		return err
	}
	section(os.Stdout, "Insert-to-start latency (issue 13, 2)",
		figure{name: "idle queue, 1,000 inserts one at a time: p50", value: ms(percentile(idle, 50)), unit: "ms", goal: 2, atMost: true},
		figure{name: "idle queue: p99", value: ms(percentile(idle, 99)), unit: "ms", goal: 10, atMost: true},
		figure{name: "steady 1,000 inserts/s for 10 s: p50", value: ms(percentile(steady, 50)), unit: "ms", goal: noGoal},
		figure{name: "steady 1,000 inserts/s: p99", value: ms(percentile(steady, 99)), unit: "ms", goal: 25, atMost: true},
		figure{name: "planned tasks, start after plan: p50", value: ms(percentile(planned, 50)), unit: "ms", goal: noGoal},
		figure{name: "planned tasks: p99", value: ms(percentile(planned, 99)), unit: "ms", goal: 20, atMost: true})
	return nil
}

// idleLatency inserts n tasks one at a time, each after the one before started, and returns how
// long after the insert was sent each started (its start column, the agent's clock on this host).
func idleLatency(ctx context.Context, conn *pgx.Conn, w written, n int) ([]time.Duration, error) {
	var lat []time.Duration
	for i := 0; i < n; i++ {
		sent := time.Now()
		var id int64
		if err := conn.QueryRow(ctx, "INSERT INTO task (input, delete) VALUES ('SELECT 1', false) RETURNING id").Scan(&id); err != nil {
			return nil, fmt.Errorf("insert: %w", err)
		}
		deadline := time.After(10 * time.Second)
		for {
			var start *time.Time
			if err := conn.QueryRow(ctx, "/* taskbench */ SELECT start FROM task WHERE id = $1", id).Scan(&start); err != nil {
				return nil, err
			}
			if start != nil {
				lat = append(lat, start.Sub(sent))
				break
			}
			select {
			case <-w.c:
			case <-deadline:
				return nil, fmt.Errorf("task %d did not start within 10 s", id)
			}
		}
	}
	return lat, nil
}

// steadyLatency inserts tasks at rate per second for d from 4 sessions, each row carrying when its
// insert was sent, waits for them to end, and returns how long after the insert each started.
func (e *env) steadyLatency(ctx context.Context, db string, rate int, d time.Duration) ([]time.Duration, error) {
	const sessions = 4
	every := time.Second * sessions / time.Duration(rate)
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		conn, err := e.connectAs(ctx, db, e.role)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close(ctx)
			tick := time.NewTicker(every)
			defer tick.Stop()
			end := time.Now().Add(d)
			for now := range tick.C {
				if now.After(end) {
					return
				}
				if _, err := conn.Exec(ctx, `INSERT INTO task (input, delete, data, "group", max) VALUES ('SELECT 1', false, $1, 'steady', 1000000)`,
					time.Now().UTC().Format(time.RFC3339Nano)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return nil, fmt.Errorf("steady inserts: %w", err)
	}
	if _, err := e.waitEnded(ctx, db, 0, 5*time.Minute); err != nil {
		return nil, err
	}
	return e.durations(ctx, db, `SELECT start - data::timestamptz FROM pgjobs.task WHERE "group" = 'steady'`)
}

// plannedLatency inserts n tasks planned 2 to 5 s ahead, spread, waits for them, and returns how
// long after its plan each started.
func plannedLatency(ctx context.Context, conn *pgx.Conn, n int) ([]time.Duration, error) {
	if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO task (input, delete, "group", max, plan)
		SELECT 'SELECT 1', false, 'planned', 1000000, clock_timestamp() + interval '2 s' + g * interval '3 ms' FROM generate_series(1, %d) g`, n)); err != nil {
		return nil, fmt.Errorf("insert planned tasks: %w", err)
	}
	time.Sleep(6 * time.Second) // the last plan is 5 s ahead: a measurement, not a test
	rows, err := conn.Query(ctx, `SELECT start - plan FROM task WHERE "group" = 'planned' AND start IS NOT NULL`)
	if err != nil {
		return nil, err
	}
	lat, err := pgx.CollectRows(rows, pgx.RowTo[time.Duration])
	if err != nil {
		return nil, err
	}
	if len(lat) != n {
		return nil, fmt.Errorf("%d of %d planned tasks started within 1 s of the last plan", len(lat), n)
	}
	return lat, nil
}

// durations returns the one interval column of sql's rows on db.
func (e *env) durations(ctx context.Context, db, sql string) ([]time.Duration, error) {
	conn, err := e.connect(ctx, db)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, sql)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[time.Duration])
}
