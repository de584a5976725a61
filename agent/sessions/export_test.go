package sessions

import (
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Alive is alive, for the tests of the package sessions_test, which have the test cluster.
func Alive(conn *pgconn.PgConn, deadline time.Time) bool { return alive(conn, deadline) }

// Pending is pendingInput, for the same tests.
func Pending(conn *pgconn.PgConn) (pending, open bool) { return pendingInput(conn) }
