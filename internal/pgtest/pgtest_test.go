package pgtest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

var cluster *pgtest.Cluster

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &cluster)) }

func TestConnectQueryRestartConnect(t *testing.T) {
	if !cluster.Own() {
		t.Skip("the server of " + pgtest.DSNVariable + " cannot be restarted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := cluster.NewDatabase(t)
	conn := cluster.Connect(t, db)
	if _, err := conn.Exec(ctx, "CREATE TABLE survives (n int); INSERT INTO survives VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	var pidBefore int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pidBefore); err != nil {
		t.Fatal(err)
	}

	if err := cluster.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("the connection from before the restart still works: the server did not restart")
	}

	again := cluster.Connect(t, db)
	var n int
	if err := again.QueryRow(ctx, "SELECT n FROM survives").Scan(&n); err != nil || n != 42 {
		t.Fatalf("after the restart: n = %d, %v; want 42", n, err)
	}
}

func TestStopServerRefusesConnections(t *testing.T) {
	if !cluster.Own() {
		t.Skip("the server of " + pgtest.DSNVariable + " cannot be stopped")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := cluster.StopServer(ctx); err != nil {
		t.Fatal(err)
	}
	cfg, err := cluster.ConnConfig("postgres")
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnectTimeout = 2 * time.Second
	if conn, err := pgx.ConnectConfig(ctx, cfg); err == nil {
		conn.Close(ctx)
		t.Fatal("connected to a stopped server")
	}
	if err := cluster.StartServer(ctx); err != nil {
		t.Fatal(err)
	}
	cluster.Connect(t, "postgres")
}

func TestNewDatabaseIsFreshAndDropped(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("inner", func(t *testing.T) {
		name = cluster.NewDatabase(t)
		conn := cluster.Connect(t, name)
		var tables int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&tables); err != nil || tables != 0 {
			t.Fatalf("new database has %d tables, %v", tables, err)
		}
	})
	conn := cluster.Connect(t, "postgres")
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil || exists {
		t.Fatalf("database %s still exists after its test: %v %v", name, exists, err)
	}
}

func TestTCPListens(t *testing.T) {
	if !cluster.Own() {
		t.Skip("only our own cluster listens on 127.0.0.1")
	}
	cfg, err := cluster.ConnConfig("postgres")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Host = "127.0.0.1"
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close(context.Background())
}
