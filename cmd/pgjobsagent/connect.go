package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// pgxConnect connects with a libpq keyword/value string, as pgjobsagent.
func pgxConnect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = "pgjobsagent check-config"
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return conn, nil
}
