package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/pgjobs/pgjobs/agent"
)

// claims collects the agent's claim times by phase of the bloat measurement.
type claims struct {
	mu    sync.Mutex
	phase int
	took  [3][]time.Duration
}

func (c *claims) add(_ int, took time.Duration, _ int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.took[c.phase] = append(c.took[c.phase], took)
}

func (c *claims) next() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.phase++
}

// reportBloat runs 1,000 tasks/s for a minute, then for hold while a REPEATABLE READ transaction
// holds its snapshot (no dead row can be removed meanwhile), then for a minute after it ends, and
// prints the throughput and claim times of each phase.
func (e *env) reportBloat(ctx context.Context, hold time.Duration) error {
	db, err := e.newDatabase(ctx, "bloat")
	if err != nil {
		return err
	}
	c := &claims{}
	stop := e.runAgent(db, func(o *agent.Options) { o.OnTasksClaimed = c.add })
	defer stop()
	steadyCtx, stopInserts := context.WithCancel(ctx)
	defer stopInserts()
	inserting := make(chan error, 1)
	go func() { inserting <- e.insertSteadily(steadyCtx, db, 1000) }()
	rate := func(d time.Duration) (float64, error) {
		before, err := e.ended(ctx, db)
		if err != nil {
			return 0, err
		}
		time.Sleep(d)
		after, err := e.ended(ctx, db)
		return float64(after-before) / d.Seconds(), err
	}
	baseline, err := rate(time.Minute)
	if err != nil {
		return err
	}
	c.next()
	snapshot, err := e.connect(ctx, db)
	if err != nil {
		return err
	}
	defer snapshot.Close(ctx)
	if _, err := snapshot.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM pgjobs.task"); err != nil {
		return fmt.Errorf("hold a snapshot: %w", err)
	}
	held, err := rate(hold)
	if err != nil {
		return err
	}
	if _, err := snapshot.Exec(ctx, "COMMIT"); err != nil {
		return err
	}
	c.next()
	recovered := time.Duration(-1)
	for waited := 10 * time.Second; waited <= time.Minute; waited += 10 * time.Second {
		r, err := rate(10 * time.Second)
		if err != nil {
			return err
		}
		if r >= 0.95*baseline {
			recovered = waited
			break
		}
	}
	stopInserts()
	if err := <-inserting; err != nil && ctx.Err() == nil && steadyCtx.Err() == nil {
		return err
	}
	back := noGoal
	if recovered >= 0 {
		back = recovered.Seconds()
	}
	section(os.Stdout, fmt.Sprintf("Bloat: 1,000 tasks/s while a snapshot is held for %s (issue 13, 5)", hold),
		figure{name: "tasks/s before the snapshot", value: baseline, unit: "tasks/s", goal: noGoal},
		figure{name: "tasks/s while it is held", value: held, unit: "tasks/s", goal: noGoal},
		figure{name: "drop while it is held", value: 100 * (1 - held/baseline), unit: "%", goal: 10, atMost: true},
		figure{name: "claim p99 before", value: ms(percentile(c.took[0], 99)), unit: "ms", goal: noGoal},
		figure{name: "claim p99 while it is held", value: ms(percentile(c.took[1], 99)), unit: "ms", goal: 50, atMost: true},
		figure{name: "back to 95% of the rate after it ends, within", value: back, unit: "s", goal: 60, atMost: true, note: "10 s windows"})
	return nil
}

// insertSteadily inserts no-op tasks at rate per second from 4 sessions until ctx ends.
func (e *env) insertSteadily(ctx context.Context, db string, rate int) error {
	const sessions = 4
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		conn, err := e.connectAs(ctx, db, e.role)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close(context.Background())
			tick := time.NewTicker(time.Second * sessions / time.Duration(rate))
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
				if _, err := conn.Exec(ctx, `INSERT INTO task (input, delete, "group", max) VALUES ('SELECT 1', false, 'steady', 1000000)`); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// ended returns how many tasks of db have ended.
func (e *env) ended(ctx context.Context, db string) (int64, error) {
	var n int64
	err := e.queryRow(ctx, db, "/* taskbench */ SELECT count(*) FROM pgjobs.task WHERE state IN ('DONE', 'FAIL')", &n)
	return n, err
}
