package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/config"
)

// connect opens a session to the database of a configuration row, as its user, by libpq
// conventions: the password comes from PGPASSWORD, ~/.pgpass or a service file, never from pgjobs.
// A host list connects to the one that accepts writes.
func connect(ctx context.Context, d config.Database) (*pgx.Conn, error) {
	return connectNoticed(ctx, d, nil)
}

// connectNoticed is connect, with the server's notices and warnings handed to onNotice (nil: dropped).
func connectNoticed(ctx context.Context, d config.Database, onNotice pgconn.NoticeHandler) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(d.DSN() + " application_name=pgjobs")
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", d.Target(), err)
	}
	cfg.OnNotice = onNotice
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s as %s: %w", d.Target(), d.ResolvedUser(), err)
	}
	return conn, nil
}

// requireSuperuser fails, saying so in one line, unless the session's role is a superuser: what
// enabledb, disabledb and updatesystem do to a database needs one.
func requireSuperuser(ctx context.Context, conn *pgx.Conn, command string, d config.Database) error {
	var role string
	var super bool
	if err := conn.QueryRow(ctx, "SELECT current_user::text, rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user").Scan(&role, &super); err != nil {
		return fmt.Errorf("%s: read the role of the session: %w", d.Target(), err)
	}
	if !super {
		return fmt.Errorf("%s needs a superuser, and %s connects as %s, which is not one: name a superuser with -u (for the agent's row too), or ask one to run it", command, d.Target(), role)
	}
	return nil
}
