// Package sessions lends the agent's sessions of one server within a budget, fairly between owners.
package sessions

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Budget is the most sessions the agent keeps open on one server (host and port), shared by the
// database agents of that server. Part of it is fixed: each database agent's leader session and its
// sessions for the run history (Reserve). The rest is lent to runs, as sessions of the runs' owners,
// through a Pool per database.
//
// Runs that find no room wait in line, one line per owner and database; a freed session goes to the
// lines in turn, so that one owner's backlog never keeps another owner waiting for more than one
// run's end. An owner never holds the last session a pool or the budget has for runs while they
// have two or more: the first run of another owner finds one at once.
type Budget struct {
	// IdleTimeout is how long a session lent before may stay open unused; 0 means 5 min.
	IdleTimeout time.Duration
	// KeepWarmed is how long a session warmed for a fire is kept from other lines; 0 means 5 s.
	KeepWarmed time.Duration
	// OldestAfter is how long a run may wait in line before the lines of one owner are served
	// oldest run first rather than by the runs waiting per session held; 0 means 1 s.
	OldestAfter time.Duration
	// StartingMax is the most runs that may be starting at once (granted a session less than
	// StartingFor ago, see starts.go); 0 means DefaultStartingMax.
	StartingMax int
	// StartingFor is how long a run counts as starting; 0 means 50 ms.
	StartingFor time.Duration
	// EndAfter is how long the backend of a run given up and cancelled may still run before it is
	// ended (endOnServer); 0 means 5 s.
	EndAfter time.Duration
	// LoginBurst is how many sessions an owner may open at once, and LoginRate how many a second
	// after that (see logins.go); 0 means DefaultLoginBurst and DefaultLoginRate.
	LoginBurst int
	LoginRate  float64

	mu            sync.Mutex
	size          int                    // the sessions in all; 0 until known
	configured    bool                   // size was set by the configuration, not read from the server
	fixed         int                    // sessions reserved outside the lending
	open          int                    // lent or idle sessions, and those being opened
	byOwner       map[string]int         // open of each owner
	lentBy        map[string]int         // lent of each owner, in all pools
	warming       map[*Pool]bool         // the open pools whose runs are warmed for: each warms a share
	idle          []*Session             // open and unused, oldest first
	lines         map[key][]*waiter      // runs waiting, by owner and database
	turns         []key                  // the lines in the order they take turns
	turn          int                    // the index in turns of the next line to serve
	idleTimer     *time.Timer            // closes the sessions idle too long
	keepTimer     *time.Timer            // serves the lines when a warmed session is kept no longer
	closing       []*pgx.Conn            // sessions to close once the lock is released
	server        backoff                // after the server refused sessions for want of slots
	ownerPause    map[string]*backoff    // after it refused an owner's sessions: the role's connection limit
	retry         *time.Timer            // serves the lines again when a pause ends
	retryAt       time.Time              // when retry fires
	quiet         chan struct{}          // closed when no run waits in line; nil until Quiet asks
	openTook      time.Duration          // how long opening a session takes, on average
	holds         map[key]time.Duration  // how long a run of each line holds its session, on average
	lastBack      map[key]time.Time      // when a run of each line last gave its session back
	heldBack      bool                   // a line was refused a move since the lines were last served
	starts        []*start               // the runs counted as starting, oldest first (some done)
	startingN     int                    // the runs starting: of starts, those not done
	startTimer    *time.Timer            // serves the lines when the oldest starting run stops counting
	logins        map[string]loginBucket // the logins each owner may still make, when fewer than all
	loginsPruneAt int                    // the owners in logins at which those with all back are forgotten
}

// key names a line: the runs of one owner in one database.
type key struct {
	pool  *Pool
	owner string
}

// waiter is a run waiting in line.
type waiter struct {
	grant chan grant
	hooks Hooks
	ctx   context.Context
	since time.Time // when its run first asked for a session
}

// grant is what a waiter is given: a session, or leave to open one; neither when its pool closed.
type grant struct {
	s     *Session
	open  bool
	start *start // the run counted as starting
}

// NewBudget returns a budget of size sessions; 0 means a share of the server's connections, set by
// Learn once a database agent has connected.
func NewBudget(size int) *Budget {
	return &Budget{size: size, configured: size > 0, byOwner: map[string]int{}, lentBy: map[string]int{}, lines: map[key][]*waiter{}, ownerPause: map[string]*backoff{}, warming: map[*Pool]bool{}}
}

// DefaultShare is the share of the connections a server accepts from ordinary roles that the agent
// takes when the configuration sets no budget: half, leaving the rest to applications.
func DefaultShare(available int) int { return max(2, available/2) }

// Learn sets the budget from the connections the server accepts from ordinary roles
// (max_connections minus the reserved ones), unless the configuration set it.
func (b *Budget) Learn(available int) {
	b.mu.Lock()
	defer b.unlock()
	if !b.configured {
		b.size = DefaultShare(available)
		b.dispatch()
	}
}

// Configure sets the budget to size sessions; 0 leaves it to Learn, from the next connect on.
func (b *Budget) Configure(size int) {
	b.mu.Lock()
	defer b.unlock()
	b.configured = size > 0
	if size > 0 {
		b.size = size
		b.closeIdleOver()
		b.dispatch()
	}
}

// Size returns the budget's size, and how many of its sessions are reserved outside the lending.
func (b *Budget) Size() (size, fixed int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.size, b.fixed
}

// Reserve takes n sessions out of the lending, for sessions the caller opens itself; the function it
// returns gives them back. It reports whether the budget still has a session to lend: when it
// does not, runs get one at a time.
func (b *Budget) Reserve(n int) (unreserve func(), ok bool) {
	b.mu.Lock()
	b.fixed += n
	b.closeIdleOver()
	ok = b.size == 0 || b.size-b.fixed >= 1
	b.unlock()
	return b.unreserve(n), ok
}

// TryReserve is Reserve when the budget has n sessions now, leaving the runs one to lend: the
// sessions lent to runs, those reserved and n more fit its size (idle sessions are closed for
// them). Otherwise it changes nothing and reports false.
func (b *Budget) TryReserve(n int) (unreserve func(), ok bool) {
	b.mu.Lock()
	if b.size > 0 && (b.size-b.fixed-n < 1 || b.open-len(b.idle)+b.fixed+n > b.size) {
		b.mu.Unlock()
		return func() {}, false
	}
	b.fixed += n
	b.closeIdleOver()
	b.unlock()
	return b.unreserve(n), true
}

// unreserve returns the function that gives n reserved sessions back, once.
func (b *Budget) unreserve(n int) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.fixed -= n
			b.dispatch()
			b.unlock()
		})
	}
}

// lendable is how many sessions the budget lends to runs at once.
func (b *Budget) lendable() int {
	size := b.size
	if size == 0 {
		size = unknownSize
	}
	return max(1, size-b.fixed)
}

// unknownSize is the budget until it is learnt: runs start only once their database agent leads,
// after it has read the server's connection limit, so this is a fallback.
const unknownSize = 10

// ownerLimit is how many of the budget's sessions one owner may hold. b.mu is held.
func (b *Budget) ownerLimit() int { return share(b.lendable()) }

// share is how many of limit sessions one owner may hold: all but one when there are two or more.
func share(limit int) int {
	if limit >= 2 {
		return limit - 1
	}
	return limit
}

// unlock releases the lock and closes the sessions given up under it.
func (b *Budget) unlock() {
	closing := b.closing
	b.closing = nil
	b.mu.Unlock()
	for _, c := range closing {
		go closeConn(c)
	}
}

func closeConn(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Close(ctx)
}

// room reports whether the line k may have a session it has to open, after closing evict (nil when
// there is room without): the oldest idle session it may close, but none that spare (if not nil)
// keeps. b.mu is held.
func (b *Budget) room(k key, spare func(*Session) bool) (evict *Session, ok bool) {
	p := k.pool
	if p.closed || p.lent >= p.max || p.lentBy[k.owner] >= share(p.max) {
		return nil, false
	}
	limit := b.lendable()
	ownerFull := b.byOwner[k.owner] >= b.ownerLimit()
	if b.paused(k) {
		return nil, false // the role's or the database's connection limit: closing no other session helps
	}
	if !ownerFull && b.open < limit && !time.Now().Before(b.server.until) {
		return nil, true
	}
	now := time.Now()
	for _, s := range b.idle { // the oldest first
		if s.key != k && (!ownerFull || s.key.owner == k.owner) && !now.Before(s.keepUntil) && (spare == nil || !spare(s)) {
			return s, true
		}
	}
	return nil, false
}

// lend counts a session of line k as lent. b.mu is held.
func (b *Budget) lend(k key) {
	k.pool.lent++
	k.pool.lentBy[k.owner]++
	b.lentBy[k.owner]++
}

// permit counts a session line k opens, closing evict first. b.mu is held.
func (b *Budget) permit(k key, evict *Session) {
	if evict != nil {
		b.dropIdle(evict)
		b.closeSession(evict)
	}
	b.open++
	b.byOwner[k.owner]++
	b.lend(k)
}

// closed counts a session of owner as closed. b.mu is held.
func (b *Budget) closed(owner string) {
	b.open--
	if b.byOwner[owner]--; b.byOwner[owner] == 0 {
		delete(b.byOwner, owner)
	}
}

// closeSession counts s as closed and closes its connection once the lock is released. b.mu is held.
func (b *Budget) closeSession(s *Session) {
	b.closed(s.key.owner)
	b.closing = append(b.closing, s.Conn)
}

// takeIdle returns the session line k used last, if one is idle and the line may have it. One
// whose server ended it while it was idle is closed instead, and the next is looked at. b.mu is
// held.
func (b *Budget) takeIdle(k key) *Session {
	p := k.pool
	if p.lent >= p.max || p.lentBy[k.owner] >= share(p.max) || b.startsFull() {
		return nil
	}
	deadline := time.Now().Add(lookFor)
	for i := len(b.idle) - 1; i >= 0; i-- {
		if s := b.idle[i]; s.key == k {
			b.idle = append(b.idle[:i], b.idle[i+1:]...)
			if !alive(s.Conn.PgConn(), deadline) {
				b.closeSession(s)
				continue
			}
			s.keepUntil = time.Time{} // it serves its fire
			b.lend(k)
			return s
		}
	}
	return nil
}

// dropIdle takes s off the idle sessions. b.mu is held.
func (b *Budget) dropIdle(s *Session) {
	for i, t := range b.idle {
		if t == s {
			b.idle = append(b.idle[:i], b.idle[i+1:]...)
			return
		}
	}
}

// closeIdleOver closes idle sessions while more are open than the budget lends. b.mu is held.
func (b *Budget) closeIdleOver() {
	for b.open > b.lendable() && len(b.idle) > 0 {
		s := b.idle[0]
		b.idle = b.idle[1:]
		b.closeSession(s)
	}
}

// Use returns the budget's size (0 until known), the sessions counted against it (reserved, open
// or being opened) and the runs waiting in line for one.
func (b *Budget) Use() (size, inUse, waiting int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, line := range b.lines {
		waiting += len(line)
	}
	return b.size, b.fixed + b.open, waiting
}
