package sessions

import "time"

// What a session costs and what it saves: a run's line that holds sessions already closes another
// line's idle session to open one of its own only when its waiting runs would keep its sessions busy
// for more than twice the time opening one takes. At a busy minute, the lines that finish first would
// otherwise hand their sessions, one new connection each, to lines that finish a few runs later
// anyway, and take them back at the next minute: with 1,000 runs over 10 databases, 25 sessions
// were opened every minute, each taking 20 to 80 ms of a loaded server.

// costWeight is the weight of the newest measure in the running averages of open and hold times.
const costWeight = 8 // 1/8

// averaged returns avg moved towards d by 1/costWeight; d itself when there is no average yet.
func averaged(avg, d time.Duration) time.Duration {
	if avg == 0 {
		return max(d, 1)
	}
	return max(avg+(d-avg)/costWeight, 1)
}

// opened records that opening a session took d. b.mu is held.
func (b *Budget) opened(d time.Duration) { b.openTook = averaged(b.openTook, d) }

// heldFor records that a run of line k held its session for d, and gave it back now. b.mu is held.
func (b *Budget) heldFor(k key, d time.Duration) {
	if k.pool.closed {
		return // forgotten when it closed; a session lent then comes back later
	}
	if b.holds == nil {
		b.holds, b.lastBack = map[key]time.Duration{}, map[key]time.Time{}
	}
	b.holds[k] = averaged(b.holds[k], d)
	b.lastBack[k] = time.Now()
}

// stuckSince is when line k's first run began to wait with none of k's sessions given back since:
// once that is longer ago than twice the time a session takes to open, its sessions are held by
// long runs, whatever the average says. The zero time when k has no run waiting. b.mu is held.
func (b *Budget) stuckSince(k key) time.Time {
	line := b.lines[k]
	if len(line) == 0 {
		return time.Time{}
	}
	since := line[0].since
	if back := b.lastBack[k]; back.After(since) {
		since = back
	}
	return since
}

// roomToRun is room for a run of line k: closing another line's idle session only when that is
// worth it. b.mu is held.
func (b *Budget) roomToRun(k key) (evict *Session, ok bool) {
	if b.startsFull() {
		return nil, false // the start timer serves the lines again
	}
	evict, ok = b.room(k)
	if evict != nil && !b.worthMoving(k) {
		b.heldBack = true // dispatch then arms the timer that serves k once moving is worth it
		return nil, false
	}
	return evict, ok
}

// forget drops what was measured of pool p's lines. b.mu is held.
func (b *Budget) forget(p *Pool) {
	for k := range b.holds {
		if k.pool == p {
			delete(b.holds, k)
			delete(b.lastBack, k)
		}
	}
}

// worthMoving reports whether line k gains from a session of its own in place of another line's
// idle one, closed for it: always when k holds none, when its first run has waited past OldestAfter,
// or when none of its sessions came back for twice the time a session takes to open while a run
// waited (they are held by long runs), else when its waiting runs (the asking one at least)
// would keep the sessions it holds busy for more than twice the time a session takes to open: the
// time the new one saves (what is left once it is open, shared by one session more) is then worth
// the server's work of a new session and of the first run on it. b.mu is held.
func (b *Budget) worthMoving(k key) bool {
	held := b.held(k)
	if held == 0 {
		return true
	}
	line := b.lines[k]
	if len(line) > 0 && time.Since(line[0].since) > b.oldestAfter() {
		return true
	}
	hold, open := b.holds[k], b.openTook
	if hold == 0 || open == 0 {
		return true // nothing measured yet
	}
	if since := b.stuckSince(k); !since.IsZero() && time.Since(since) > 2*open {
		return true
	}
	// The runs waiting keep the held sessions busy for n×hold/held: more than 2×open? Compared by
	// division, which cannot overflow.
	return hold > 2*open*time.Duration(held)/time.Duration(max(1, len(line)))
}
