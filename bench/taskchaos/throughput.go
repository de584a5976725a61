package main

// Throughput over time: the count of ended tasks sampled every 250 ms; the baseline rate before
// the first fault; after each fault, the first 2 s window, wholly after it, that reaches 95 % of
// the baseline.

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	sampleEvery    = 250 * time.Millisecond
	recoveryWindow = 2 * time.Second
	recoveryShare  = 0.95
	recoveryGoal   = 10 * time.Second
	warmUp         = 3 * time.Second // left out of the baseline: the first claims, the sessions opening
)

// sample is the number of ended tasks (DONE, FAIL, GONE) at a moment.
type sample struct {
	at    time.Time
	ended int
}

// sampler samples in the background on a session of its own, reconnecting when it fails (the
// server restart leaves a gap).
type sampler struct {
	mu      sync.Mutex
	samples []sample
	cancel  context.CancelFunc
	done    chan struct{}
}

func startSampler(ctx context.Context, e *env) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		var conn *pgx.Conn
		defer func() {
			if conn != nil {
				conn.Close(context.Background())
			}
		}()
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			if conn == nil {
				conn, _ = pgx.Connect(ctx, e.cluster.DSN(database))
			}
			if conn != nil {
				q, cancelQ := context.WithTimeout(ctx, time.Second)
				var n int
				err := conn.QueryRow(q, "SELECT count(*) FROM pgjobs.task WHERE state IN ('DONE', 'FAIL', 'GONE')").Scan(&n)
				cancelQ()
				if err == nil {
					s.mu.Lock()
					s.samples = append(s.samples, sample{time.Now(), n})
					s.mu.Unlock()
				} else {
					conn.Close(context.Background())
					conn = nil
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *sampler) stop() {
	s.cancel()
	<-s.done
}

func (s *sampler) all() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}

// between returns the first sample at or after from and the last at or before to.
func between(samples []sample, from, to time.Time) (first, last sample, ok bool) {
	for _, s := range samples {
		if s.at.Before(from) || s.at.After(to) {
			continue
		}
		if !ok {
			first, ok = s, true
		}
		last = s
	}
	return first, last, ok && last.at.After(first.at)
}

func rate(a, b sample) float64 { return float64(b.ended-a.ended) / b.at.Sub(a.at).Seconds() }

// baselineRate is the rate from t0 + warmUp to end; 0 while it cannot be told.
func baselineRate(samples []sample, t0, end time.Time) float64 {
	first, last, ok := between(samples, t0.Add(warmUp), end)
	if !ok {
		return 0
	}
	return rate(first, last)
}

// recovery is how the throughput came back after one fault.
type recovery struct {
	fault     *fault
	after     time.Duration // the end of the first window at 95 % of the baseline, from the fault; 0: not within the watch
	watched   time.Duration // how long after the fault the samples were searched
	dip       float64       // the lowest 2 s window rate after the fault, before the recovery
	recovered bool
}

// throughput is the run's throughput figures.
type throughput struct {
	baseline          float64
	baseLow, baseHigh float64 // the lowest and highest 2 s window of the baseline
	recoveries        []recovery
	starved           bool // the queue ran dry before the first fault: the baseline is too low
}

// measureRecovery finds, for each fault, the first window of recoveryWindow lying wholly after
// it (and before the next fault) whose rate reaches recoveryShare of the baseline.
func measureRecovery(samples []sample, t0, baseEnd time.Time, faults []*fault, spacing time.Duration) throughput {
	th := throughput{baseline: baselineRate(samples, t0, baseEnd)}
	th.baseLow, th.baseHigh = windowRange(samples, t0.Add(warmUp), baseEnd)
	for i, f := range faults {
		until := f.at.Add(spacing)
		if i+1 < len(faults) && faults[i+1].at.Before(until) {
			until = faults[i+1].at
		}
		r := recovery{fault: f, watched: until.Sub(f.at), dip: -1}
		for j, end := range samples {
			if end.at.Before(f.at.Add(recoveryWindow)) || end.at.After(until) {
				continue
			}
			start, ok := windowStart(samples[:j], end.at.Add(-recoveryWindow))
			if !ok || start.at.Before(f.at) {
				continue
			}
			v := rate(start, end)
			if r.dip < 0 || v < r.dip {
				r.dip = v
			}
			if v >= recoveryShare*th.baseline {
				r.after, r.recovered = end.at.Sub(f.at), true
				break
			}
		}
		th.recoveries = append(th.recoveries, r)
	}
	return th
}

// windowStart returns the last sample at or before t.
func windowStart(samples []sample, t time.Time) (sample, bool) {
	for i := len(samples) - 1; i >= 0; i-- {
		if !samples[i].at.After(t) {
			return samples[i], true
		}
	}
	return sample{}, false
}

// windowRange returns the lowest and highest rate of the 2 s windows within [from, to].
func windowRange(samples []sample, from, to time.Time) (low, high float64) {
	low = -1
	for j, end := range samples {
		if end.at.After(to) {
			break
		}
		start, ok := windowStart(samples[:j], end.at.Add(-recoveryWindow))
		if !ok || start.at.Before(from) {
			continue
		}
		v := rate(start, end)
		if low < 0 || v < low {
			low = v
		}
		high = max(high, v)
	}
	return max(low, 0), high
}

// waitEnded waits until no task that is due is left waiting, claimed or running, and gives up
// after 60 s without one ending.
func waitEnded(ctx context.Context, e *env) error {
	last, lastChange := -1, time.Now()
	for {
		var left int
		err := e.pool.QueryRow(ctx, `SELECT count(*) FROM pgjobs.task
			WHERE state IN ('PLAN', 'TAKE', 'WORK') AND plan < now() + interval '1 hour'`).Scan(&left)
		if err == nil && left == 0 {
			return nil
		}
		if err == nil && left != last {
			last, lastChange = left, time.Now()
		}
		if time.Since(lastChange) > time.Minute {
			return fmt.Errorf("%d due tasks still not ended after a minute without progress (last error: %v)", last, err)
		}
		if err := sleepUntil(ctx, time.Now().Add(sampleEvery)); err != nil {
			return err
		}
	}
}
