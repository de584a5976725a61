package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/config"
)

// connect opens a session to the database of a configuration row, as its user, by libpq
// conventions: the password comes from PGPASSWORD, ~/.pgpass or a service file, never from pgjobs.
// A host list connects to the one that accepts writes.
func connect(ctx context.Context, d config.Database) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(d.DSN() + " application_name=pgjobs")
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", d.Target(), err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s as %s: %w", d.Target(), d.ResolvedUser(), err)
	}
	return conn, nil
}
