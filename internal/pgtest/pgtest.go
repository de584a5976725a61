// Package pgtest starts a throwaway PostgreSQL cluster for the tests of one package.
//
// One cluster serves one test binary: TestMain calls Main, which starts the cluster from the
// installed server binaries (pg_config --bindir, else the newest /usr/lib/postgresql/*/bin),
// runs the tests and removes the cluster, also when they fail. The cluster listens on a unix
// socket in its own temporary directory and on 127.0.0.1, on a free port, with fsync off and
// trust authentication. initdb refuses to run as root, so under root the server runs as the
// postgres OS user. PGJOBS_TEST_DSN points the tests at an existing server instead.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DSNVariable names the environment variable that points the tests at an existing server.
const DSNVariable = "PGJOBS_TEST_DSN"

// ErrExternal is returned by the methods that need a cluster of our own (Restart, StopServer,
// StartServer, StartReplica, Promote) when the tests run against the server of PGJOBS_TEST_DSN.
var ErrExternal = errors.New("the tests use an existing server (" + DSNVariable + "): it cannot be stopped or restarted")

// Cluster is a PostgreSQL server the tests may use as they like.
type Cluster struct {
	base      *pgconn.Config // connection to the maintenance database as a superuser
	databases atomic.Int64   // numbers the databases NewDatabase creates

	// Set for a cluster of our own; nil or zero for an external server.
	bindir   string
	settings Settings
	dir      string // the temporary directory: data/, the socket, postgres.log
	port     int
	runAs    *syscall.Credential // the postgres OS user when the tests run as root
	primary  *Cluster            // the cluster a replica streams from; nil for a primary
	mu       sync.Mutex          // guards server
	server   *exec.Cmd
	exited   chan struct{} // closed when server has exited
	waitErr  error         // how server exited, set before exited is closed
}

// Main starts a cluster, stores it in *cluster, runs the tests and removes the cluster. It returns
// the exit code for os.Exit:
//
//	var cluster *pgtest.Cluster
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &cluster)) }
func Main(m *testing.M, cluster **Cluster) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := Start(ctx)
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		return 1
	}
	*cluster = c
	code := m.Run()
	if err := c.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "pgtest: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// Settings are the server settings of a throwaway cluster.
type Settings struct {
	// Durable keeps fsync, synchronous_commit and full_page_writes on, as a real server has them;
	// the tests turn them off.
	Durable bool
	// MaxConnections is max_connections; 0 means 500, the tests' setting.
	MaxConnections int
	// Extra are more settings, as name=value, given to the server with -c (a benchmark's
	// shared_preload_libraries=pg_stat_statements, say).
	Extra []string
}

// Start starts a throwaway cluster with the tests' settings (durability off, 500 connections), or
// connects to the server of PGJOBS_TEST_DSN when it is set.
func Start(ctx context.Context) (*Cluster, error) {
	return StartWith(ctx, Settings{})
}

// StartWith starts a throwaway cluster with settings, or connects to the server of
// PGJOBS_TEST_DSN when it is set (whose settings are its own).
func StartWith(ctx context.Context, settings Settings) (*Cluster, error) {
	if dsn := os.Getenv(DSNVariable); dsn != "" {
		base, err := pgconn.ParseConfig(dsn)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", DSNVariable, err)
		}
		c := &Cluster{base: base}
		if err := c.ping(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", DSNVariable, err)
		}
		return c, nil
	}
	bindir, err := serverBindir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bindir: bindir, settings: settings}
	if os.Geteuid() == 0 {
		if c.runAs, err = postgresUser(); err != nil {
			return nil, err
		}
	}
	removeStaleClusters()
	if err := c.initdb(ctx); err != nil {
		c.removeDir()
		return nil, err
	}
	if err := c.startOnFreePort(ctx); err != nil {
		c.removeDir()
		return nil, err
	}
	return c, nil
}

// Close stops the server and removes its directory. For an external server it does nothing.
func (c *Cluster) Close() error {
	if c.dir == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.StopServer(ctx)
	c.removeDir()
	return err
}

// Own reports whether the cluster is ours (it can be stopped and restarted), not PGJOBS_TEST_DSN's.
func (c *Cluster) Own() bool { return c.dir != "" }

// Tool returns the path of a PostgreSQL client program such as pg_dump: the one beside the
// server of our own cluster, else the name to find in PATH.
func (c *Cluster) Tool(name string) string {
	if c.bindir != "" {
		return filepath.Join(c.bindir, name)
	}
	return name
}

// Host returns the host to connect to: the socket directory of our own cluster.
func (c *Cluster) Host() string { return c.base.Host }

// Port returns the server's port.
func (c *Cluster) Port() int { return int(c.base.Port) }

// User returns the superuser the tests connect as.
func (c *Cluster) User() string { return c.base.User }

// DSN returns a keyword/value connection string for database as the superuser.
func (c *Cluster) DSN(database string) string {
	parts := []string{
		"host=" + quoteValue(c.base.Host),
		"port=" + strconv.Itoa(int(c.base.Port)),
		"user=" + quoteValue(c.base.User),
		"dbname=" + quoteValue(database),
	}
	if c.base.Password != "" {
		parts = append(parts, "password="+quoteValue(c.base.Password))
	}
	if c.base.TLSConfig == nil {
		parts = append(parts, "sslmode=disable")
	}
	return strings.Join(parts, " ")
}

// ConnConfig returns a connection configuration for database as the superuser.
func (c *Cluster) ConnConfig(database string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(c.DSN(database))
	if err != nil {
		return nil, err
	}
	if c.base.TLSConfig != nil {
		cfg.TLSConfig = c.base.TLSConfig.Clone()
	}
	return cfg, nil
}

// Connect connects to database as the superuser; the connection is closed when the test ends.
func (c *Cluster) Connect(t testing.TB, database string) *pgx.Conn {
	t.Helper()
	conn, err := c.connect(context.Background(), database)
	if err != nil {
		t.Fatalf("connect to %s: %v", database, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// connectAs connects to database as role.
func (c *Cluster) connectAs(database, role string) (*pgx.Conn, error) {
	cfg, err := c.ConnConfig(database)
	if err != nil {
		return nil, err
	}
	cfg.User = role
	return pgx.ConnectConfig(context.Background(), cfg)
}

// TakeEverySlot opens sessions of role on database until the server refuses one for want of
// connection slots, and returns them (closed when the test ends, or by the caller sooner): another
// client took the server's slots. Any other error fails the test.
func (c *Cluster) TakeEverySlot(t testing.TB, database, role string) []*pgx.Conn {
	t.Helper()
	var hogs []*pgx.Conn
	t.Cleanup(func() {
		for _, h := range hogs {
			h.Close(context.Background())
		}
	})
	for {
		conn, err := c.connectAs(database, role)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "53300" { // too_many_connections
			return hogs
		}
		if err != nil {
			t.Fatalf("connect to %s as %s: %v", database, role, err)
		}
		hogs = append(hogs, conn)
	}
}

// NewDatabase creates an empty database for the test and drops it when the test ends.
func (c *Cluster) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("pgjobs_test_%s_%d", sanitize(t.Name()), c.databases.Add(1))
	ctx := context.Background()
	if err := c.admin(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := c.admin(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return name
}

// NewRole creates a login role with a name unique to this cluster, starting with prefix, and
// drops it (and what it owns in database) when the test ends. Trust authentication lets it connect
// without a password to our own cluster.
func (c *Cluster) NewRole(t testing.TB, prefix, database string) string {
	t.Helper()
	name := fmt.Sprintf("%s_%d", prefix, c.databases.Add(1))
	ctx := context.Background()
	if err := c.admin(ctx, "CREATE ROLE "+pgx.Identifier{name}.Sanitize()+" LOGIN"); err != nil {
		t.Fatalf("create role %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn, err := c.connect(ctx, database)
		if err == nil {
			_, _ = conn.Exec(ctx, "DROP OWNED BY "+pgx.Identifier{name}.Sanitize())
			conn.Close(ctx)
		}
		if err := c.admin(ctx, "DROP ROLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Errorf("drop role %s: %v", name, err)
		}
	})
	return name
}

// ConnectAs connects to database as role; the connection is closed when the test ends.
func (c *Cluster) ConnectAs(t testing.TB, database, role string) *pgx.Conn {
	t.Helper()
	conn, err := c.connectAs(database, role)
	if err != nil {
		t.Fatalf("connect to %s as %s: %v", database, role, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
