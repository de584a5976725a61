package pgtest

// Streaming replicas of a cluster of our own, and their promotion: failover of the database
// server, tested for real.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// StartReplica starts a streaming replica of the cluster: a cluster of its own, copied with
// pg_basebackup (-R writes standby.signal and the primary_conninfo that streams from c), with the
// same settings, in its own temporary directory and on its own free port. It is a hot standby: it
// accepts read-only sessions until Promote. Close stops it and removes its directory; the primary
// may be stopped or closed before it. StartReplica returns ErrExternal for the server of
// PGJOBS_TEST_DSN.
func (c *Cluster) StartReplica(ctx context.Context) (*Cluster, error) {
	if !c.Own() {
		return nil, ErrExternal
	}
	r := &Cluster{bindir: c.bindir, settings: c.settings, runAs: c.runAs, primary: c}
	if err := r.makeDir(); err != nil {
		return nil, fmt.Errorf("start a replica: %w", err)
	}
	// The backup connects over the primary's socket; "local replication all trust", which initdb
	// writes, lets it in.
	cmd := r.command(filepath.Join(r.bindir, "pg_basebackup"),
		"-D", filepath.Join(r.dir, "data"),
		"-h", c.dir, "-p", strconv.Itoa(c.port), "-U", c.base.User,
		"-R", "-X", "stream", "--checkpoint=fast", "--no-sync")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := runContext(ctx, cmd); err != nil {
		r.removeDir()
		return nil, fmt.Errorf("start a replica: pg_basebackup: %w\n%s", err, out.String())
	}
	if err := r.startOnFreePort(ctx); err != nil {
		r.removeDir()
		return nil, fmt.Errorf("start a replica: %w", err)
	}
	return r, nil
}

// InRecovery reports whether the server is a standby in recovery (pg_is_in_recovery()).
func (c *Cluster) InRecovery(ctx context.Context) (bool, error) {
	conn, err := c.connect(ctx, c.base.Database)
	if err != nil {
		return false, err
	}
	defer conn.Close(ctx)
	var inRecovery bool
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_is_in_recovery()").Scan(&inRecovery); err != nil {
		return false, err
	}
	return inRecovery, nil
}

// CatchUp waits until a replica of StartReplica has replayed all that its primary had written
// when CatchUp was called, also what an asynchronous commit left in its WAL buffers (the insert
// position, not the write position: the tests run with synchronous_commit off).
func (c *Cluster) CatchUp(ctx context.Context) error {
	if !c.Own() {
		return ErrExternal
	}
	if c.primary == nil {
		return errors.New("catch up: the cluster is no replica of StartReplica")
	}
	primary, err := c.primary.connect(ctx, c.primary.base.Database)
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	var lsn string
	err = primary.QueryRow(ctx, "SELECT pg_catalog.pg_current_wal_insert_lsn()::text").Scan(&lsn)
	primary.Close(ctx)
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	conn, err := c.connect(ctx, c.base.Database)
	if err != nil {
		return fmt.Errorf("catch up: %w", err)
	}
	defer conn.Close(ctx)
	for {
		var replayed bool
		if err := conn.QueryRow(ctx, "SELECT coalesce(pg_catalog.pg_last_wal_replay_lsn() >= $1::pg_lsn, false)", lsn).Scan(&replayed); err != nil {
			return fmt.Errorf("catch up: %w", err)
		}
		if replayed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("catch up to %s: %w", lsn, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Promote makes a standby the primary (pg_promote) and returns once it accepts writes: it is no
// longer in recovery. It streams from its old primary no more, which is left as it is.
func (c *Cluster) Promote(ctx context.Context) error {
	if !c.Own() {
		return ErrExternal
	}
	conn, err := c.connect(ctx, c.base.Database)
	if err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	defer conn.Close(ctx)
	var promoted bool
	if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_promote(true, 60)").Scan(&promoted); err != nil {
		return fmt.Errorf("promote: %w", err)
	}
	if !promoted {
		return fmt.Errorf("promote: the server was not promoted within 60 s\n%s", c.logTail())
	}
	for {
		var inRecovery bool
		if err := conn.QueryRow(ctx, "SELECT pg_catalog.pg_is_in_recovery()").Scan(&inRecovery); err != nil {
			return fmt.Errorf("promote: %w", err)
		}
		if !inRecovery {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("promote: still in recovery: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
