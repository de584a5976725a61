package sessions

import (
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Alive is alive, for the tests of the package sessions_test, which have the test cluster.
func Alive(conn *pgconn.PgConn, deadline time.Time) bool { return alive(conn, deadline) }

// Pending is pendingInput, for the same tests.
func Pending(conn *pgconn.PgConn) (pending, open bool) { return pendingInput(conn) }

// EndBackend is Pool.endBackend, for the same tests.
func EndBackend(p *Pool, owner string, pid uint32, start time.Time) (bool, error) {
	return p.endBackend(owner, pid, start)
}
