package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// reportInserts measures what the wake-ups cost the inserts: 8 sessions insert single rows (each
// its own transaction) with the notification trigger, and with it disabled, in turns, while the
// agent listens (the rows are planned tomorrow: it wakes, looks and sleeps again).
func (e *env) reportInserts(ctx context.Context) error {
	db, err := e.newDatabase(ctx, "inserts")
	if err != nil {
		return err
	}
	stop := e.runAgent(db, nil)
	defer stop()
	const rounds, each = 3, 4 * time.Second
	var with, without []float64
	for i := 0; i < rounds; i++ {
		for _, notify := range []bool{true, false} {
			trigger := "ENABLE"
			if !notify {
				trigger = "DISABLE"
			}
			if err := e.exec(ctx, db, "ALTER TABLE pgjobs.task "+trigger+" TRIGGER task_notify_insert"); err != nil {
				return err
			}
			rate, err := e.insertRate(ctx, db, 8, each)
			if err != nil {
				return err
			}
			if notify {
				with = append(with, rate)
			} else {
				without = append(without, rate)
			}
		}
	}
	if err := e.exec(ctx, db, "ALTER TABLE pgjobs.task ENABLE TRIGGER task_notify_insert"); err != nil {
		return err
	}
	w, wo := median(with), median(without)
	section(os.Stdout, "Wake-ups and inserts (issue 13, 3)",
		figure{name: "8 sessions inserting, with the notification", value: w, unit: "rows/s", goal: noGoal, note: fmt.Sprintf("median of %d rounds of %s", rounds, each)},
		figure{name: "8 sessions inserting, without it", value: wo, unit: "rows/s", goal: noGoal},
		figure{name: "loss to the notification", value: 100 * (1 - w/wo), unit: "%", goal: 10, atMost: true})
	return nil
}

// insertRate runs sessions inserting one row per transaction for d and returns the rows/s.
func (e *env) insertRate(ctx context.Context, db string, sessions int, d time.Duration) (float64, error) {
	var inserted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	end := time.Now().Add(d)
	for i := 0; i < sessions; i++ {
		conn, err := e.connectAs(ctx, db, e.role)
		if err != nil {
			return 0, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close(ctx)
			for time.Now().Before(end) {
				if _, err := conn.Exec(ctx, "INSERT INTO task (input, plan) VALUES ('SELECT 1', now() + interval '1 day')"); err != nil {
					errs <- err
					return
				}
				inserted.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return 0, fmt.Errorf("inserts: %w", err)
	}
	return float64(inserted.Load()) / d.Seconds(), nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
