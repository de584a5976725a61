package agent

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// OpenSessionToEnd is dbAgent.openSessionToEnd for a database agent of dsn, for the tests of the
// package agent_test, which have the test cluster.
func OpenSessionToEnd(ctx context.Context, dsn, owner string) (*pgx.Conn, error) {
	a := &dbAgent{db: Database{ID: 1, DSN: dsn}}
	conn, _, err := a.openSessionToEnd(ctx, owner)
	return conn, err
}
