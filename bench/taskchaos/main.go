// Command taskchaos runs thousands of tasks through the built agent on a throwaway cluster while it kills agents, a task's backend and the server, then checks the outcome and prints its figures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// options are the flags of a run.
type options struct {
	tasks    int           // tasks inserted up front
	groups   int           // concurrency groups, max 0..3 in turn
	logDir   string        // where the agents log; kept when set
	keep     bool          // keep the cluster up after the figures, until Ctrl-C
	baseline time.Duration // from the insert to the first fault: the baseline throughput's window
	spacing  time.Duration // between faults: each fault's recovery window
	seed     int64         // the task mix's random source
}

func main() {
	var o options
	flag.IntVar(&o.tasks, "tasks", 10000, "tasks inserted up front (more are added if the queue would run dry before a fault's recovery is measured)")
	flag.IntVar(&o.groups, "groups", 50, "concurrency groups; group i has max i mod 4")
	flag.StringVar(&o.logDir, "log", "", "write the agents' logs to this directory and keep it (default: a temporary directory, removed)")
	flag.BoolVar(&o.keep, "keep", false, "keep the cluster running after the figures for inspection, until Ctrl-C")
	flag.DurationVar(&o.baseline, "baseline", 15*time.Second, "the baseline window, from the insert to the first fault")
	flag.DurationVar(&o.spacing, "spacing", 20*time.Second, "the time between faults (each fault's recovery window)")
	flag.Int64Var(&o.seed, "seed", 1, "seed of the task mix")
	flag.Parse()
	if flag.NArg() > 0 || o.tasks < 100 || o.groups < 4 || o.baseline < 5*time.Second || o.spacing < 12*time.Second {
		fmt.Fprintln(os.Stderr, "usage: taskchaos [-tasks N>=100] [-groups N>=4] [-log DIR] [-keep] [-baseline D>=5s] [-spacing D>=12s] [-seed N]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ok, err := run(ctx, o)
	interrupted := ctx.Err() != nil
	stop()
	if err != nil && interrupted {
		fmt.Fprintln(os.Stderr, "taskchaos: interrupted; the agents and the cluster were stopped")
		os.Exit(1)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "taskchaos:", err)
		os.Exit(1)
	}
	if !ok {
		os.Exit(1)
	}
}

// run sets up the cluster and the agents, runs the workload through the faults, and reports
// whether every goal was met. Everything it started is stopped before it returns.
func run(ctx context.Context, o options) (bool, error) {
	began := time.Now()
	work, err := os.MkdirTemp("", "taskchaos-")
	if err != nil {
		return false, fmt.Errorf("make a work directory: %w", err)
	}
	defer os.RemoveAll(work)
	logf(began, "building the agent")
	bin, err := buildAgent(ctx, work)
	if err != nil {
		return false, err
	}
	logf(began, "starting a throwaway cluster (durable, max_connections 100)")
	env, err := setUp(ctx)
	if err != nil {
		return false, err
	}
	defer env.close(ctx, o.keep)
	logRoot := o.logDir
	if logRoot == "" {
		logRoot = filepath.Join(work, "log")
	}
	agents, err := newFleet(bin, env, work, logRoot)
	if err != nil {
		return false, err
	}
	defer agents.stopAll()
	if _, err := agents.start(); err != nil {
		return false, err
	}
	if _, err := agents.start(); err != nil {
		return false, err
	}
	if err := agents.waitPair(ctx, env.pool); err != nil {
		return false, err
	}
	logf(began, "two agents: one active, one standing by; inserting %d tasks as role %s", o.tasks, env.role)

	mix := newMix(o.seed, o.groups)
	if err := insertTasks(ctx, env, mix.next(o.tasks)); err != nil {
		return false, err
	}
	t0 := time.Now()
	samples := startSampler(ctx, env)
	defer samples.stop()

	c := &chaos{o: o, began: began, t0: t0, env: env, agents: agents, mix: mix, samples: samples}
	faults, starved, err := c.strike(ctx)
	if err != nil {
		return false, err
	}
	logf(began, "faults done; waiting for the queue to empty")
	if err := waitEnded(ctx, env); err != nil {
		logf(began, "%v", err)
	}
	agents.stopAll()
	samples.stop()
	logf(began, "agents stopped; checking")

	fig, err := check(ctx, env, mix, faults, agents.logLines(), agents.exits())
	if err != nil {
		return false, err
	}
	fig.tasks = mix.issued()
	fig.wall = time.Since(began)
	fig.throughput = measureRecovery(samples.all(), t0, t0.Add(o.baseline), faults, o.spacing)
	fig.throughput.starved = starved
	return fig.print(os.Stdout), nil
}

// chaos is a run under way: what strike needs.
type chaos struct {
	o         options
	began, t0 time.Time // the program's start; the end of the insert
	env       *env
	agents    *fleet
	mix       *mix
	samples   *sampler
}

// strike strikes the faults, one every spacing after the baseline, topping the queue up before
// each when it would run dry, and reports whether it ran dry during the baseline.
func (c *chaos) strike(ctx context.Context) ([]*fault, bool, error) {
	var faults []*fault
	starved := false // the queue ran dry during the baseline
	kinds := []faultKind{killActive, killActive, terminateBackend, restartServer}
	for i, kind := range kinds {
		at := c.t0.Add(c.o.baseline + time.Duration(i)*c.o.spacing)
		rate := func() float64 { return baselineRate(c.samples.all(), c.t0, c.t0.Add(c.o.baseline)) }
		toppedUp := func(n int) { logf(c.began, "topped the queue up with %d tasks", n) }
		if i > 0 { // halfway too, so that a top-up is not a burst of claims at the fault
			if err := sleepUntil(ctx, at.Add(-c.o.spacing/2)); err != nil {
				return nil, false, err
			}
			if _, err := topUp(ctx, c.env, c.mix, rate(), c.o.spacing, toppedUp); err != nil {
				return nil, false, err
			}
		}
		if err := sleepUntil(ctx, at); err != nil {
			return nil, false, err
		}
		ready, err := topUp(ctx, c.env, c.mix, rate(), c.o.spacing, toppedUp)
		if err != nil {
			return nil, false, err
		}
		starved = starved || (i == 0 && ready == 0)
		f, err := inject(ctx, kind, c.env, c.agents)
		if err != nil {
			return nil, false, fmt.Errorf("fault %d (%s): %w", i+1, kind, err)
		}
		logf(c.began, "fault %d: %s; %s", i+1, f.name, f.claimedStates())
		faults = append(faults, f)
	}
	if err := sleepUntil(ctx, c.t0.Add(c.o.baseline+time.Duration(len(kinds))*c.o.spacing)); err != nil {
		return nil, false, err
	}
	return faults, starved, ctx.Err()
}

// logf prints a progress line with the seconds since began.
func logf(began time.Time, format string, args ...any) {
	fmt.Printf("[%6.1fs] %s\n", time.Since(began).Seconds(), fmt.Sprintf(format, args...))
}

// sleepUntil waits until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
