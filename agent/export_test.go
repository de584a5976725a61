package agent

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// OpenSessionToEnd is dbAgent.openSessionToEnd for a database agent of dsn, for the tests of the
// package agent_test, which have the test cluster.
// Each call opens n sessions on one database agent, and says whether it still names
// transaction_timeout after them.
func OpenSessionToEnd(ctx context.Context, dsn, owner string, n int) (conns []*pgx.Conn, namesTimeout bool, err error) {
	a := &dbAgent{db: Database{ID: 1, DSN: dsn}}
	for range n {
		conn, _, err := a.openSessionToEnd(ctx, owner)
		if err != nil {
			return conns, false, err
		}
		conns = append(conns, conn)
	}
	return conns, !a.noTransactionTimeout.Load(), nil
}
