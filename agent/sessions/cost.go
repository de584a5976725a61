package sessions

import "time"

// What a session costs and what it saves: a run's line that holds sessions already closes another
// line's idle session to open one of its own only when its waiting runs would keep its sessions busy
// for more than twice the time opening one takes. At a busy minute, the lines that finish first would
// otherwise hand their sessions, one new connection each, to lines that finish a few runs later
// anyway, and take them back at the next minute: with 1,000 runs over 10 databases, 25 sessions
// were opened every minute, each taking 20 to 80 ms of a loaded server. Nor does it close a session
// its own line awaits (awaited), unless it is urgent: between two busy databases of one owner, a
// session stays with the line that has it.

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
// worth it, and none while k's owner has no login left (logins.go). b.mu is held.
func (b *Budget) roomToRun(k key) (evict *Session, ok bool) {
	if b.startsFull() {
		return nil, false // the start timer serves the lines again
	}
	if b.loginWait(k.owner) > 0 {
		b.heldBack = true // dispatch then arms the timer that serves k when its login is due
		return nil, false
	}
	evict, ok = b.room(k, func(s *Session) bool {
		if b.awaited(s) && !b.urgent(k, s) {
			b.heldBack = true // k is served again once s is no longer awaited (armRetry)
			return true
		}
		return false
	})
	if evict != nil && !b.fewer(k, evict) && !b.worthMoving(k) {
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

// awaited reports whether idle session s is likely to serve a run of its own line sooner than a
// session closed for another line would open: a run of its line waits for it (until fewer runs are
// starting, see starts.go), or it came back less than the time a session takes to open ago (its
// line's next run may be on its way). Closing it would cost the server a session's end and
// another's start, at its busiest, to give one line what another was about to use: with 1,000 runs
// due over 10 databases, such moves were 8 to 12 of the sessions opened each minute, and the p99
// of a minute was 290 ms (median of 10 minutes) with them, 238 ms (of 7) without. b.mu is held.
func (b *Budget) awaited(s *Session) bool {
	p := s.key.pool
	if len(b.lines[s.key]) > 0 && p.lent < p.max && p.lentBy[s.key.owner] < share(p.max) {
		return true
	}
	return time.Since(s.idleSince) < b.openTook
}

// urgent reports whether line k may close idle session s of another line even when that line
// awaits it: its owner holds fewer of the budget's sessions than s's (fewer), or it is pressed.
// b.mu is held.
func (b *Budget) urgent(k key, s *Session) bool { return b.fewer(k, s) || b.pressed(k) }

// fewer reports whether line k's owner is another than idle session s's and holds fewer of the
// budget's sessions (open: lent, idle or being opened): one owner's backlog, or sessions the owner
// has just given back, never keep another owner's run waiting, whatever a move costs. b.mu is held.
func (b *Budget) fewer(k key, s *Session) bool {
	return k.owner != s.key.owner && b.byOwner[k.owner] < b.byOwner[s.key.owner]
}

// pressed reports whether line k needs a session more than any cost of opening one: it holds none,
// its first run has waited past OldestAfter, or none of its sessions came back for twice the time a
// session takes to open while a run waited (they are held by long runs). b.mu is held.
func (b *Budget) pressed(k key) bool {
	if b.held(k) == 0 {
		return true
	}
	if line := b.lines[k]; len(line) > 0 && time.Since(line[0].since) > b.oldestAfter() {
		return true
	}
	since := b.stuckSince(k)
	return !since.IsZero() && b.openTook > 0 && time.Since(since) > 2*b.openTook
}

// worthMoving reports whether line k gains from a session of its own in place of another line's
// idle one, closed for it: always when it is pressed, else when its waiting runs (the asking one at
// least) would keep the sessions it holds busy for more than twice the time a session takes to
// open: the time the new one saves (what is left once it is open, shared by one session more) is
// then worth the server's work of a new session and of the first run on it. b.mu is held.
func (b *Budget) worthMoving(k key) bool {
	if b.pressed(k) {
		return true
	}
	hold, open := b.holds[k], b.openTook
	if hold == 0 || open == 0 {
		return true // nothing measured yet
	}
	// The runs waiting keep the held sessions busy for n×hold/held: more than 2×open? Compared by
	// division, which cannot overflow.
	return hold > 2*open*time.Duration(b.held(k))/time.Duration(max(1, len(b.lines[k])))
}
