package sessions

import (
	"context"
	_ "embed"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

//go:embed end_backend.sql
var endBackendSQL string

// endAfter is EndAfter or its default.
func (b *Budget) endAfter() time.Duration {
	if b.EndAfter > 0 {
		return b.EndAfter
	}
	return 5 * time.Second
}

// warnf tells Warnf, if set, what the budget could not do.
func (b *Budget) warnf(format string, args ...any) {
	if b.Warnf != nil {
		b.Warnf(format, args...)
	}
}

// endOnServer ends the backend of session s, whose run was given up before its answer came (its
// context ended) and whose connection is closed: the server is asked to cancel the statement, and
// when the backend still runs EndAfter later (a call that catches the cancel, having turned off
// the server's check of the client's connection), it is ended with pg_terminate_backend on a
// session of its own role opened for that, which no call can catch. Otherwise it would run on
// outside the budget, holding a connection slot, for as long as its call likes. Not once the
// pool's context has ended (the agent stops): the cancel only, as then.
func (p *Pool) endOnServer(conn *pgconn.PgConn, s *Session) {
	cancelOnServer(conn)
	wait := time.NewTimer(p.budget.endAfter()) // real time: a bound on a backend, not a schedule
	defer wait.Stop()
	select {
	case <-p.ctx.Done():
		return
	case <-wait.C:
	}
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	admin, _, err := p.open(ctx, s.key.owner)
	if err != nil {
		if p.ctx.Err() == nil {
			p.budget.warnf("backend %d of %s, given up %s ago, may still run: no session to end it: %v", s.PID, s.key.owner, p.budget.endAfter(), err)
		}
		return
	}
	defer admin.Close(context.Background())
	var ended bool
	err = admin.QueryRow(ctx, endBackendSQL, int64(s.PID), s.Start).Scan(&ended)
	switch {
	case err == nil && ended:
		p.budget.warnf("backend %d of %s still ran %s after its run was given up and cancelled: ended", s.PID, s.key.owner, p.budget.endAfter())
	case err != nil && !errors.Is(err, pgx.ErrNoRows) && p.ctx.Err() == nil:
		p.budget.warnf("backend %d of %s, given up %s ago, may still run: %v", s.PID, s.key.owner, p.budget.endAfter(), err)
	}
}
