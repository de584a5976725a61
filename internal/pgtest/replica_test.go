package pgtest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// TestReplicaFollowsAndPromotes: a replica has what the primary wrote before and after it started,
// refuses writes until promoted, accepts them after, and is gone when closed.
func TestReplicaFollowsAndPromotes(t *testing.T) {
	t.Parallel()
	if !cluster.Own() {
		t.Skip("the server of " + pgtest.DSNVariable + " has no replica of ours")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := cluster.NewDatabase(t)
	primary := cluster.Connect(t, db)
	if _, err := primary.Exec(ctx, "CREATE TABLE notes (n int); INSERT INTO notes VALUES (1)"); err != nil {
		t.Fatal(err)
	}

	replica, err := cluster.StartReplica(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(replica.LogPath())
	defer func() {
		if err := replica.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the replica's directory %s is still there after Close: %v", dir, err)
		}
	}()
	if replica.Port() == cluster.Port() || replica.Host() == cluster.Host() {
		t.Fatalf("the replica listens where the primary does: %s:%d", replica.Host(), replica.Port())
	}
	if _, err := primary.Exec(ctx, "INSERT INTO notes VALUES (2)"); err != nil { // streamed, not in the backup
		t.Fatal(err)
	}
	if err := replica.CatchUp(ctx); err != nil {
		t.Fatal(err)
	}
	if inRecovery, err := replica.InRecovery(ctx); err != nil || !inRecovery {
		t.Fatalf("the replica in recovery: %v, %v; want true", inRecovery, err)
	}
	onReplica := replica.Connect(t, db)
	var sum int
	if err := onReplica.QueryRow(ctx, "SELECT sum(n) FROM notes").Scan(&sum); err != nil || sum != 3 {
		t.Fatalf("the replica reads sum %d, %v; want 3", sum, err)
	}
	var pgErr *pgconn.PgError
	if _, err := onReplica.Exec(ctx, "INSERT INTO notes VALUES (4)"); !errors.As(err, &pgErr) || pgErr.Code != "25006" {
		t.Fatalf("a write on the standby: %v; want SQLSTATE 25006 (read-only transaction)", err)
	}

	if err := replica.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if inRecovery, err := replica.InRecovery(ctx); err != nil || inRecovery {
		t.Fatalf("the promoted replica in recovery: %v, %v; want false", inRecovery, err)
	}
	if _, err := onReplica.Exec(ctx, "INSERT INTO notes VALUES (4)"); err != nil {
		t.Fatalf("a write on the promoted replica: %v", err)
	}
	if err := primary.QueryRow(ctx, "SELECT sum(n) FROM notes").Scan(&sum); err != nil || sum != 3 {
		t.Fatalf("the primary reads sum %d, %v after the promotion; want 3, its own rows", sum, err)
	}
	if err := replica.Promote(ctx); err == nil {
		t.Fatal("promoting a primary succeeded")
	}
}
