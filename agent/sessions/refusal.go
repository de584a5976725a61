package sessions

import (
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// Refusals: when the server refuses a session, the runs it concerns pause and try again, 10 ms
// doubling to 1 s while refusals go on. A refusal for want of the server's slots pauses every run of
// the server; one for the connection limit of a role (ALTER ROLE ... CONNECTION LIMIT) pauses only
// that owner's runs, and one for a database's limit only that database's, so that a role that
// reaches its own limit delays no other role.

// Refused reports whether err is the server refusing a session for want of connection slots, or
// because it is starting up or shutting down: a run waits and tries again rather than failing.
func Refused(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	switch pgErr.Code {
	case "53300", "57P03": // too_many_connections, cannot_connect_now
		return true
	}
	return false
}

// backoff is the pause after refusals of one scope.
type backoff struct {
	refusals int       // refusals since the server last accepted a session of the scope
	until    time.Time // no session of the scope is opened before then
}

// refusedFor returns the pause err puts line k in: its owner's when the role's connection limit was
// reached, its database's when the database's was, else the server's. The server's messages are
// read in English; in another language every refusal pauses the whole server, as it is safe to.
// b.mu is held.
func (b *Budget) refusedFor(k key, err error) *backoff {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "53300" {
		switch {
		case strings.HasPrefix(pgErr.Message, "too many connections for role"):
			p, ok := b.ownerPause[k.owner]
			if !ok {
				p = &backoff{}
				b.ownerPause[k.owner] = p
			}
			return p
		case strings.HasPrefix(pgErr.Message, "too many connections for database"):
			return &k.pool.pause
		}
	}
	return &b.server
}

// refused pauses what err concerns after the server refused a session of line k, and serves the
// lines again when the pause ends. b.mu is held.
func (b *Budget) refused(k key, err error) {
	p := b.refusedFor(k, err)
	p.until = time.Now().Add(min(10*time.Millisecond<<min(p.refusals, 7), time.Second))
	p.refusals++
	b.armRetry()
}

// accepted ends the pauses of line k: the server accepted one of its sessions. b.mu is held.
func (b *Budget) accepted(k key) {
	b.server.refusals = 0
	delete(b.ownerPause, k.owner)
	k.pool.pause.refusals = 0
}

// paused reports whether line k's owner or database is paused after a refusal. b.mu is held.
func (b *Budget) paused(k key) bool {
	now := time.Now()
	if p, ok := b.ownerPause[k.owner]; ok && now.Before(p.until) {
		return true
	}
	return now.Before(k.pool.pause.until)
}

// armRetry makes sure the lines are served again when the earliest pause ends (an owner's next
// login among them), or when the first
// run of a line has waited OldestAfter or its line's sessions have been out for twice the time a
// session takes to open (it may then close another line's idle session, see worthMoving), or when
// an idle session has been idle for the time a session takes to open (see awaited). b.mu is held.
func (b *Budget) armRetry() {
	now := time.Now()
	var at time.Time
	consider := func(t time.Time) {
		if t.After(now) && (at.IsZero() || t.Before(at)) {
			at = t
		}
	}
	consider(b.server.until)
	for _, p := range b.ownerPause {
		consider(p.until)
	}
	for _, k := range b.turns {
		consider(k.pool.pause.until)
		if wait := b.loginWait(k.owner); wait > 0 {
			consider(now.Add(wait))
		}
		consider(b.lines[k][0].since.Add(b.oldestAfter() + time.Millisecond))
		if since := b.stuckSince(k); !since.IsZero() && b.openTook > 0 {
			consider(since.Add(2*b.openTook + time.Millisecond))
		}
	}
	if len(b.turns) > 0 {
		for _, s := range b.idle { // no longer awaited once idle for the time a session takes to open
			consider(s.idleSince.Add(b.openTook + time.Millisecond))
		}
	}
	if at.IsZero() || (b.retry != nil && !b.retryAt.After(at)) {
		return // no pause, or served sooner already
	}
	if b.retry != nil {
		b.retry.Stop()
	}
	var retry *time.Timer
	retry = time.AfterFunc(time.Until(at), func() {
		b.mu.Lock()
		defer b.unlock()
		if b.retry == retry {
			b.retry = nil
		}
		b.dispatch()
		b.armRetry()
	})
	b.retry, b.retryAt = retry, at
}
