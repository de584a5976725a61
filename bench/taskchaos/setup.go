package main

// The throwaway cluster: the database the agents serve, the role that inserts the tasks, and the
// table the tasks write their effects to.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/internal/pgtest"
	"github.com/pgjobs/pgjobs/sqlschema"
)

const (
	database = "chaos"
	roleName = "chaos_user"
)

// effectTable is where each task's input records its run, in its own transaction: a key with two
// rows is an effect applied twice. started is the input's transaction start (now()), stopped the
// moment of the insert, after the task's work.
const effectTable = `
CREATE TABLE chaos_effect (k int NOT NULL, grp text NOT NULL, started timestamptz NOT NULL, stopped timestamptz NOT NULL, pid int NOT NULL);
GRANT INSERT ON chaos_effect TO ` + roleName

// env is the cluster and what the run made in it.
type env struct {
	cluster *pgtest.Cluster
	role    string
	pool    *pgxpool.Pool // superuser sessions on the database, for the observations and faults
}

// setUp starts the cluster, enables pgjobs in a new database and creates the role and the table.
func setUp(ctx context.Context) (*env, error) {
	cluster, err := pgtest.StartWith(ctx, pgtest.Settings{Durable: true, MaxConnections: 100})
	if err != nil {
		return nil, fmt.Errorf("start a cluster: %w", err)
	}
	e := &env{cluster: cluster, role: roleName}
	if err := e.prepare(ctx); err != nil {
		e.close(ctx, false)
		return nil, err
	}
	return e, nil
}

func (e *env) prepare(ctx context.Context) error {
	admin, err := pgx.Connect(ctx, e.cluster.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connect to the maintenance database: %w", err)
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE "+database)
	if err == nil {
		_, err = admin.Exec(ctx, "CREATE ROLE "+roleName+" LOGIN")
	}
	admin.Close(ctx)
	if err != nil {
		return fmt.Errorf("create the database and the role: %w", err)
	}
	conn, err := pgx.Connect(ctx, e.cluster.DSN(database))
	if err != nil {
		return fmt.Errorf("connect to %s: %w", database, err)
	}
	defer conn.Close(ctx)
	if err := sqlschema.Install(ctx, conn); err != nil {
		return fmt.Errorf("enable pgjobs in %s: %w", database, err)
	}
	if _, err := conn.Exec(ctx, effectTable); err != nil {
		return fmt.Errorf("create the effect table: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(e.cluster.DSN(database))
	if err != nil {
		return fmt.Errorf("observer pool: %w", err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["application_name"] = "taskchaos"
	if e.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return fmt.Errorf("observer pool: %w", err)
	}
	return nil
}

// connectAsRole connects to the database as the role that owns the tasks.
func (e *env) connectAsRole(ctx context.Context) (*pgx.Conn, error) {
	cfg, err := e.cluster.ConnConfig(database)
	if err != nil {
		return nil, fmt.Errorf("connection settings: %w", err)
	}
	cfg.User = e.role
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect as %s: %w", e.role, err)
	}
	return conn, nil
}

// close stops the cluster and removes it; with keep it first waits for Ctrl-C, so that the cluster
// can be looked at (ctx ends on the signal).
func (e *env) close(ctx context.Context, keep bool) {
	if e.pool != nil {
		e.pool.Close()
	}
	if keep && ctx.Err() == nil {
		fmt.Printf("\nthe cluster stays up for inspection until Ctrl-C:\n  psql \"%s\"\n", e.cluster.DSN(database))
		<-ctx.Done()
	}
	if err := e.cluster.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "taskchaos: stop the cluster:", err)
	}
}

// retry calls f until it succeeds, up to 40 times 250 ms apart (a server restarting, a broken
// pooled session), or until ctx ends.
func retry(ctx context.Context, f func(context.Context) error) error {
	var err error
	for range 40 {
		attempt, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = f(attempt)
		cancel()
		if err == nil || ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
		if err := sleepUntil(ctx, time.Now().Add(250*time.Millisecond)); err != nil {
			return err
		}
	}
	return err
}

// buildAgent builds ./cmd/pgjobsagent of the module the program runs in into dir.
func buildAgent(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("find the module: go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("find the module: not inside the pgjobs module (run it from the repository)")
	}
	bin := filepath.Join(dir, "pgjobsagent")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/pgjobsagent")
	build.Dir = filepath.Dir(gomod)
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build the agent: %w\n%s", err, out)
	}
	return bin, nil
}
