// Command river measures River's burn-down throughput for no-op jobs against a given PostgreSQL database.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

const (
	insertChunk = 10_000
	stopTimeout = 30 * time.Second
)

type options struct {
	dsn                    string
	jobs, conns, workers   int
	json                   bool
	timeout                time.Duration
	fetchCooldown, fetchPI time.Duration // 0 keeps River's defaults
}

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct{ river.WorkerDefaults[noopArgs] }

func (noopWorker) Work(context.Context, *river.Job[noopArgs]) error { return nil }

func main() {
	opts, err := parseFlags(os.Args[1:])
	if err == nil {
		err = run(opts)
	}
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(2)
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "river bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("river", flag.ContinueOnError)
	fs.StringVar(&o.dsn, "dsn", "", "PostgreSQL connection string, key=value or URL (required)")
	fs.IntVar(&o.jobs, "jobs", 200_000, "number of no-op jobs to insert and work")
	fs.IntVar(&o.conns, "conns", 10, "connection budget (pgxpool MaxConns)")
	fs.IntVar(&o.workers, "workers", 100, "River MaxWorkers of the default queue")
	fs.BoolVar(&o.json, "json", false, "print one JSON object on stdout instead of text")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up after this long (whole run)")
	fs.DurationVar(&o.fetchCooldown, "fetch-cooldown", 0, "River FetchCooldown (0 = River's default)")
	fs.DurationVar(&o.fetchPI, "fetch-poll-interval", 0, "River FetchPollInterval (0 = River's default)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	switch {
	case o.dsn == "":
		return o, errors.New("-dsn is required")
	case o.jobs < 1:
		return o, fmt.Errorf("-jobs must be positive, got %d", o.jobs)
	case o.conns < 1 || o.conns > math.MaxInt32:
		return o, fmt.Errorf("-conns must be positive, got %d", o.conns)
	case o.workers < 1 || o.workers > river.QueueNumWorkersMax:
		return o, fmt.Errorf("-workers must be between 1 and %d, got %d", river.QueueNumWorkersMax, o.workers)
	case o.timeout <= 0:
		return o, fmt.Errorf("-timeout must be positive, got %s", o.timeout)
	case o.fetchCooldown < 0 || o.fetchPI < 0:
		return o, errors.New("-fetch-cooldown and -fetch-poll-interval must not be negative")
	}
	return o, nil
}

func run(o options) error {
	ctx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stopSignals()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	r, err := measure(ctx, o)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("timed out (-timeout %s): %w", o.timeout, err)
		}
		return err
	}
	return report(o, r)
}

func measure(ctx context.Context, o options) (result, error) {
	pool, err := openPool(ctx, o.dsn, o.conns)
	if err != nil {
		return result{}, err
	}
	defer pool.Close()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	driver := riverpgxv5.New(pool)
	if err := prepareSchema(ctx, pool, driver, logger); err != nil {
		return result{}, err
	}
	client, err := newClient(driver, o, logger)
	if err != nil {
		return result{}, err
	}
	insertTime, err := insertJobs(ctx, client, o.jobs)
	if err != nil {
		return result{}, err
	}
	workTime, err := burnDown(ctx, client, o.jobs)
	if err == nil {
		err = checkCompleted(ctx, pool, o.jobs)
	}
	return newResult(o, insertTime, workTime), err
}

func openPool(ctx context.Context, dsn string, conns int) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("parse -dsn: %w", err)
	}
	cfg.MaxConns = int32(conns)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create connection pool: %w", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// prepareSchema migrates River's tables to the latest version and empties river_job.
func prepareSchema(ctx context.Context, pool *pgxpool.Pool, driver *riverpgxv5.Driver, logger *slog.Logger) error {
	migrator, err := rivermigrate.New(driver, &rivermigrate.Config{Logger: logger})
	if err != nil {
		return fmt.Errorf("create River migrator: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("run River migrations: %w", err)
	}
	if _, err := pool.Exec(ctx, "TRUNCATE river_job"); err != nil {
		return fmt.Errorf("truncate river_job: %w", err)
	}
	return nil
}

func newClient(driver *riverpgxv5.Driver, o options, logger *slog.Logger) (*river.Client[pgx.Tx], error) {
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &noopWorker{}); err != nil {
		return nil, fmt.Errorf("register no-op worker: %w", err)
	}
	client, err := river.NewClient(driver, &river.Config{
		FetchCooldown:     o.fetchCooldown,
		FetchPollInterval: o.fetchPI,
		Logger:            logger,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: o.workers}},
		Workers:           workers,
	})
	if err != nil {
		return nil, fmt.Errorf("create River client: %w", err)
	}
	return client, nil
}

// insertJobs inserts n no-op jobs with COPY (InsertManyFast) in chunks, before the client starts.
func insertJobs(ctx context.Context, client *river.Client[pgx.Tx], n int) (time.Duration, error) {
	batch := make([]river.InsertManyParams, min(n, insertChunk))
	for i := range batch {
		batch[i].Args = noopArgs{}
	}
	start := time.Now()
	for done := 0; done < n; {
		chunk := batch[:min(n-done, len(batch))]
		inserted, err := client.InsertManyFast(ctx, chunk)
		if err != nil {
			return 0, fmt.Errorf("insert jobs (%d of %d done): %w", done, n, err)
		}
		done += inserted
	}
	return time.Since(start), nil
}

// burnDown starts the client and returns the time until n jobs have completed.
func burnDown(ctx context.Context, client *river.Client[pgx.Tx], n int) (time.Duration, error) {
	// The buffer holds every event so none is dropped (River never blocks on it).
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: n,
		Kinds:    []river.EventKind{river.EventKindJobCompleted, river.EventKindJobFailed, river.EventKindJobCancelled},
	})
	defer unsubscribe()

	// River's services run on an uncancelled context; the deferred Stop ends them cleanly on timeout.
	start := time.Now()
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return 0, fmt.Errorf("start River client: %w", err)
	}
	elapsed, waitErr := awaitCompleted(ctx, events, n, start)

	stopCtx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if err := client.Stop(stopCtx); err != nil && waitErr == nil {
		waitErr = fmt.Errorf("stop River client: %w", err)
	}
	return elapsed, waitErr
}

func awaitCompleted(ctx context.Context, events <-chan *river.Event, n int, start time.Time) (time.Duration, error) {
	for done := 0; done < n; {
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("wait for jobs: %d of %d completed after %s: %w",
				done, n, time.Since(start).Round(time.Millisecond), ctx.Err())
		case ev, ok := <-events:
			if !ok {
				return 0, fmt.Errorf("River subscription closed after %d of %d jobs", done, n)
			}
			if ev.Kind != river.EventKindJobCompleted {
				return 0, fmt.Errorf("job %d unexpectedly ended with event %q", ev.Job.ID, ev.Kind)
			}
			done++
		}
	}
	return time.Since(start), nil
}

// checkCompleted confirms, after the measurement, that the completed jobs are all still there.
func checkCompleted(ctx context.Context, pool *pgxpool.Pool, n int) error {
	var completed int
	err := pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&completed)
	if err != nil {
		return fmt.Errorf("count completed jobs: %w", err)
	}
	if completed != n {
		return fmt.Errorf("expected %d completed jobs in river_job, found %d", n, completed)
	}
	return nil
}
