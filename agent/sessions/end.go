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

// EndParams are the settings a session opened to end a backend connects with (its opener sets
// them as startup parameters, which win over the role's own defaults): the role's defaults set while
// its stubborn run went on (the attacker reviews: a statement_timeout of 1 ms, a DateStyle, a
// search_path with its own =, local_preload_libraries naming no library, a client_encoding set from
// a SQL_ASCII database) must not keep the session from ending the backend.
var EndParams = map[string]string{
	"search_path":                         "pg_catalog, pg_temp",
	"statement_timeout":                   "10000",
	"lock_timeout":                        "0",
	"idle_in_transaction_session_timeout": "0",
	"DateStyle":                           "ISO",
	"default_transaction_read_only":       "off",
	"default_transaction_isolation":       "read committed",
	"default_transaction_deferrable":      "off",
	"role":                                "none",
	"local_preload_libraries":             "", // a missing library fails every login (the second attacker review)
	"client_encoding":                     "UTF8",
}

// endTrying is how long endOnServer tries to open a session to end a backend with: the role's
// connection limit may be full (of such backends, say) for a while.
const endTrying = 5 * time.Minute

// warnf tells Warnf, if set, what the pool could not do, or had to.
func (p *Pool) warnf(format string, args ...any) {
	if p.Warnf != nil {
		p.Warnf(format, args...)
	}
}

// endOnServer ends the backend of session s, whose run was given up before its answer came (its
// context ended) and whose connection is closed: the server is asked to cancel the statement, and
// when the backend still runs EndAfter later (a call that catches the cancel, having turned off
// the server's check of the client's connection), it is ended with pg_terminate_backend on a
// session of its own role opened for that, which no call can catch. Otherwise it would run on
// outside the budget, holding a connection slot, for as long as its call likes. When that session
// cannot be opened (the role's connection limit is full, say), it tries again, 1 s doubling to
// 30 s, for endTrying. Not once the pool is closed or its context has ended (the agent, or its
// database agent, stops): the cancel only, as then. A database agent that lost the lead still
// ends the backends of its runs given up.
func (p *Pool) endOnServer(conn *pgconn.PgConn, s *Session) {
	cancelOnServer(conn)
	cancelled := time.Now()
	wait := p.budget.endAfter()
	deadline := cancelled.Add(wait + endTrying)
	pause := time.Second
	for {
		timer := time.NewTimer(wait) // real time: a bound on a backend, not a schedule
		select {
		case <-p.ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		if p.isClosed() {
			return
		}
		ended, err := p.endBackend(s.key.owner, s.PID, s.Start)
		switch {
		case err == nil && ended:
			p.warnf("the backend %d of a run of %s still ran %s after the run was given up and cancelled: it was ended", s.PID, s.key.owner, time.Since(cancelled).Round(100*time.Millisecond))
			return
		case err == nil: // it had ended
			return
		case p.ctx.Err() != nil:
			return
		case time.Now().Add(pause).After(deadline):
			p.warnf("the backend %d of a run of %s, given up and cancelled, may still run: it could not be ended: %v", s.PID, s.key.owner, err)
			return
		}
		wait, pause = pause, min(2*pause, 30*time.Second)
	}
}

// endBackend ends, on a session of owner opened for that (OpenToEnd), the backend pid that started
// at start, and reports whether it was still there to end.
func (p *Pool) endBackend(owner string, pid uint32, start time.Time) (ended bool, err error) {
	ctx, cancel := context.WithTimeout(p.ctx, 15*time.Second)
	defer cancel()
	open := p.open
	if p.OpenToEnd != nil {
		open = p.OpenToEnd
	}
	p.ChargeLogins(owner, 1) // within the owner's logins, not waiting for one: a bound on a backend
	conn, _, err := open(ctx, owner)
	if err != nil {
		return false, err
	}
	defer conn.Close(context.Background())
	err = conn.QueryRow(ctx, endBackendSQL, int32(pid), start).Scan(&ended)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	return ended, err
}

// isClosed reports whether the pool is closed.
func (p *Pool) isClosed() bool {
	p.budget.mu.Lock()
	defer p.budget.mu.Unlock()
	return p.closed
}
