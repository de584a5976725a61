package sessions

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// MaxMessage is the largest message of the server a lent session reads, in bytes.
const MaxMessage = 1 << 20

// ErrPoolClosed is returned by Acquire when the pool closed while the run waited.
var ErrPoolClosed = errors.New("the database agent stopped lending sessions")

// Opener opens a session of owner on a pool's database, and returns it with its backend_start.
// Its connection must not keep server-side prepared statements of pgx's cache
// (pgx.QueryExecModeExec or simpler): a reset deallocates them.
type Opener func(ctx context.Context, owner string) (*pgx.Conn, time.Time, error)

// Pool lends the sessions of one database's job owners, from a Budget.
type Pool struct {
	// Warnf, if not nil, is told what the pool could not do, or had to: a backend of a run given
	// up that it ended, or could not end (endOnServer). Set before the pool lends.
	Warnf func(format string, args ...any)
	// OpenToEnd, if not nil, opens the session of an owner that ends a backend of its run given up
	// (endOnServer), with EndParams; nil means the pool's own opener. Set before the pool lends.
	OpenToEnd Opener

	budget *Budget
	ctx    context.Context // sessions are opened within it
	open   Opener
	max    int // sessions lent at once; runs beyond wait in line

	// Guarded by budget.mu.
	lent   int            // sessions lent, and being opened
	lentBy map[string]int // lent of each owner
	closed bool
	pause  backoff // after the server refused its sessions: the database's connection limit
}

// Session is a session of a job owner lent to a run.
type Session struct {
	Conn  *pgx.Conn
	PID   uint32    // the backend's process id
	Start time.Time // the backend's start: with PID, it names the session in the run history
	Runs  int       // how many times it was lent, this time included

	key       key
	idleSince time.Time
	keepUntil time.Time // warmed for a fire: no other line closes it before then
	lentAt    time.Time // when a run was given it; zero while no run holds it
	start     *start    // its run counted as starting; guarded by the budget's lock
}

// NewPool returns a pool lending at most max sessions at once from b, opened with open within ctx,
// whose sessions are warmed ahead of its runs (Warm): the budget is shared evenly between such
// pools ahead of a busy minute.
func (b *Budget) NewPool(ctx context.Context, max int, open Opener) *Pool {
	p := b.NewUnwarmedPool(ctx, max, open)
	b.mu.Lock()
	b.warming[p] = true
	b.mu.Unlock()
	return p
}

// NewUnwarmedPool is NewPool for a pool that never warms sessions ahead (its runs come unannounced,
// as tasks do): it takes no share of the warming.
func (b *Budget) NewUnwarmedPool(ctx context.Context, max int, open Opener) *Pool {
	return &Pool{budget: b, ctx: ctx, open: open, max: max, lentBy: map[string]int{}}
}

// Hooks are what a run asking for a session is told.
type Hooks struct {
	// Waiting, if not nil, is called once if the run has to wait in line, with the number of runs
	// of the same line ahead.
	Waiting func(ahead int)
	// Granted, if not nil, is called when the run is given a session, or leave to open one, with
	// the budget's lock held: it must not call the budget. Acquire then returns the session unless
	// ctx had ended by the time Granted returned.
	Granted func()
	// Refused, if not nil, is called when the server refused the session the run was given leave to
	// open: the run waits in line again (Granted is called again when it gets another turn).
	Refused func()
}

// Acquire returns a session of owner: one this owner's runs used before when one is idle, else a
// new one. When the budget or the pool has no session to lend, the run waits in line until one is
// released, or ctx ends. When the server refuses a new session (another client took its
// connection slots), the run waits in line too and tries again, with a back-off shared by all runs
// of the server, until ctx ends; the error then says so. Once granted, a session is opened within
// the pool's context, whatever becomes of ctx.
func (p *Pool) Acquire(ctx context.Context, owner string, hooks Hooks) (*Session, error) {
	b := p.budget
	k := key{p, owner}
	var refusal error // the server's last refusal of a session for this run
	front := false    // a run the server refused goes back to the front of its line
	waited := false
	since := time.Now()
	for {
		b.mu.Lock()
		if p.closed {
			b.unlock()
			return nil, ErrPoolClosed
		}
		var g grant
		openBefore := b.open
		if len(b.lines[k]) == 0 || front {
			if g.s = b.takeIdle(k); g.s == nil {
				if evict, ok := b.roomToRun(k); ok {
					b.permit(k, evict)
					b.loggedIn(k.owner)
					g.open = true
				}
			}
			if g.s != nil || g.open {
				g.start = b.beginStart()
			}
			if g.s != nil {
				g.s.start = g.start
			}
			if (g.s != nil || g.open) && !b.granted(k, g, hooks, ctx) {
				b.dispatch()
				b.unlock()
				return nil, p.gaveUp(ctx, refusal)
			}
		}
		var w *waiter
		ahead := 0
		if g.s == nil && !g.open {
			w = &waiter{grant: make(chan grant, 1), hooks: hooks, ctx: ctx, since: since}
			if _, ok := b.lines[k]; !ok {
				b.turns = append(b.turns, k)
			}
			if front {
				b.lines[k] = append([]*waiter{w}, b.lines[k]...)
			} else {
				b.lines[k] = append(b.lines[k], w)
				ahead = len(b.lines[k]) - 1
			}
			b.armRetry() // served again once it has waited OldestAfter, if nothing frees before
		}
		if b.open < openBefore {
			b.dispatch() // takeIdle closed idle sessions that were gone: their room serves others
		}
		b.unlock()
		if w != nil {
			if hooks.Waiting != nil && !waited {
				hooks.Waiting(ahead)
			}
			waited = true
			select {
			case g = <-w.grant:
			case <-ctx.Done():
				b.cancel(k, w)
				return nil, p.gaveUp(ctx, refusal)
			}
		}
		switch {
		case g.s != nil:
			g.s.lentAt = time.Now()
			g.s.Runs++
			return g.s, nil
		case !g.open:
			return nil, ErrPoolClosed
		}
		s, err := p.openSession(p.ctx, owner)
		if err == nil {
			s.lentAt = time.Now()
			s.Runs++
			// Its run starts now: the opening counted as starting too, and StartingFor runs anew.
			b.mu.Lock()
			b.endStart(g.start)
			s.start = b.beginStart()
			b.mu.Unlock()
			return s, nil
		}
		b.mu.Lock()
		b.endStart(g.start)
		b.unlend(k)
		b.closed(owner)
		refused := Refused(err) && ctx.Err() == nil && p.ctx.Err() == nil
		if refused {
			b.refused(k, err)
		}
		b.dispatch()
		b.unlock()
		if !refused {
			if Refused(err) && ctx.Err() != nil {
				return nil, p.gaveUp(ctx, err)
			}
			return nil, err
		}
		if hooks.Refused != nil {
			hooks.Refused()
		}
		refusal, front = err, true
	}
}

// granted tells the run of line k it was granted g, and reports whether it still wants it; if not,
// g is given back. b.mu is held.
func (b *Budget) granted(k key, g grant, hooks Hooks, ctx context.Context) bool {
	if hooks.Granted != nil {
		hooks.Granted()
	}
	if ctx.Err() == nil {
		return true
	}
	b.endStart(g.start)
	if g.s != nil {
		b.giveBack(g.s, true)
	} else {
		b.unlend(k)
		b.closed(k.owner)
	}
	return false // the caller serves the lines again
}

// gaveUp is the error of a run that stopped waiting for a session when ctx ended.
func (p *Pool) gaveUp(ctx context.Context, refusal error) error {
	if refusal != nil {
		return fmt.Errorf("the server refused new sessions (%w): %w", refusal, context.Cause(ctx))
	}
	return context.Cause(ctx)
}

// openSession opens a session of owner, counted already as lent.
func (p *Pool) openSession(ctx context.Context, owner string) (*Session, error) {
	opening := time.Now()
	conn, start, err := p.open(ctx, owner)
	if err != nil {
		return nil, err
	}
	// A run's error, notice or row can be as large as its owner likes (a 150 MB error cost the
	// agent 1.3 GB): a message over MaxMessage ends the reading, and the session is closed.
	conn.PgConn().Frontend().SetMaxBodyLen(MaxMessage)
	p.budget.mu.Lock()
	p.budget.accepted(key{p, owner})
	p.budget.opened(time.Since(opening))
	p.budget.mu.Unlock()
	return &Session{Conn: conn, PID: conn.PgConn().PID(), Start: start, key: key{p, owner}}, nil
}

// cancel takes a waiter whose run gave up off its line, or gives back what it was granted. b.mu is
// not held.
func (b *Budget) cancel(k key, w *waiter) {
	b.mu.Lock()
	defer b.unlock()
	line := b.lines[k]
	for i, x := range line {
		if x == w {
			if len(line) == 1 {
				b.leave(k)
			} else {
				b.lines[k] = append(line[:i:i], line[i+1:]...)
			}
			return
		}
	}
	select {
	case g := <-w.grant:
		b.endStart(g.start)
		switch {
		case g.s != nil:
			b.giveBack(g.s, true)
		case g.open:
			b.unlend(k)
			b.closed(k.owner)
		}
		b.dispatch()
	default:
	}
}

// unlend counts a session of line k as no longer lent. b.mu is held.
func (b *Budget) unlend(k key) {
	k.pool.lent--
	if k.pool.lentBy[k.owner]--; k.pool.lentBy[k.owner] == 0 {
		delete(k.pool.lentBy, k.owner)
	}
	if b.lentBy[k.owner]--; b.lentBy[k.owner] == 0 {
		delete(b.lentBy, k.owner)
	}
}

// Release gives the session back after a run: it is reset (resetStatements, one round trip, a
// transaction of its own), so that no run sees another's settings, temporary tables, locks or
// notifications, and lent to the next run in line or kept for the next run of its owner. A session
// whose reset fails is closed. The reset commits before the next run starts: a setting that governs
// how a transaction starts (default_transaction_read_only, say) is gone by then.
func (s *Session) Release() {
	ctx, cancel := context.WithTimeout(context.Background(), resetTimeout)
	_, err := s.Conn.Exec(ctx, resetSQL, pgx.QueryExecModeSimpleProtocol)
	cancel()
	s.giveBackReset(err)
}

// ReleaseKeepingState gives the session back after a run without resetting it, so that the next
// run of its owner on it sees the settings and temporary tables this one left (a task's save): kept
// only when no transaction is left open, else closed.
func (s *Session) ReleaseKeepingState() {
	s.giveBack(!s.Conn.PgConn().IsClosed() && s.Conn.PgConn().TxStatus() == 'I')
}

// Close closes the session instead of giving it back: its run failed in a way that leaves it in
// doubt.
func (s *Session) Close() { s.giveBack(false) }

// giveBackReset gives the session back after its reset, whose error is resetErr: kept only when
// the reset committed and left no transaction open, else closed.
func (s *Session) giveBackReset(resetErr error) {
	s.giveBack(resetErr == nil && s.Conn.PgConn().TxStatus() == 'I')
}

// giveBack gives the session back to the budget, idle when keep, else closed, and serves the lines.
func (s *Session) giveBack(keep bool) {
	b := s.key.pool.budget
	b.mu.Lock()
	defer b.unlock()
	b.giveBack(s, keep)
	b.dispatch()
}

// giveBack counts a lent session back: idle when keep, else closed. The caller serves the lines
// then. b.mu is held.
func (b *Budget) giveBack(s *Session, keep bool) {
	b.endStart(s.start)
	s.start = nil
	b.unlend(s.key)
	if !s.lentAt.IsZero() {
		b.heldFor(s.key, time.Since(s.lentAt))
		s.lentAt = time.Time{}
	}
	if !keep || s.key.pool.closed || s.Conn.IsClosed() {
		b.closeSession(s)
	} else {
		s.idleSince = time.Now()
		b.idle = append(b.idle, s)
		b.armIdleTimer()
	}
	b.closeIdleOver()
}
