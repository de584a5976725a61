package sessions

import "time"

// dispatch serves the lines while any can be served, one session at a time, each to the neediest
// line: the one whose owner holds the fewest sessions of the server, then, once a run has waited
// past OldestAfter, the one whose first run has waited longest, else the one with the most runs
// waiting for each session it holds, then the next in turn. A session idle for one line moves
// to a line that has to open one only as moves says, and never while its own line awaits it unless
// the other is urgent (roomToRun): lines that hold about as many sessions as their work needs keep
// them, rather than closing one for every run of another line. b.mu is held.
func (b *Budget) dispatch() {
	defer func() {
		if b.heldBack { // a line left waiting is served again once moving is worth it (armRetry)
			b.heldBack = false
			b.armRetry()
		}
		b.quietIfOnlyPaced()
	}()
	for len(b.turns) > 0 {
		best, bestIdle := -1, false
		for i := range len(b.turns) {
			j := (b.turn + i) % len(b.turns)
			k := b.turns[j]
			idle := b.hasIdle(k)
			if !idle {
				if _, ok := b.roomToRun(k); !ok {
					continue
				}
			}
			if best < 0 || b.needier(k, idle, b.turns[best], bestIdle) {
				best, bestIdle = j, idle
			}
		}
		if best < 0 {
			return
		}
		k := b.turns[best]
		var g grant
		if g.s = b.takeIdle(k); g.s == nil {
			evict, ok := b.roomToRun(k)
			if !ok {
				continue // its idle sessions were gone (closed by takeIdle): looked at anew
			}
			b.permit(k, evict)
			b.loggedIn(k.owner)
			g.open = true
		}
		g.start = b.beginStart()
		if g.s != nil {
			g.s.start = g.start
		}
		w := b.pop(k)
		if b.granted(k, g, w.hooks, w.ctx) {
			w.grant <- g
		}
		b.turn = best // the line after k: k's place, if k left turns
		if _, waiting := b.lines[k]; waiting {
			b.turn = best + 1
		}
	}
}

// needier reports whether line k is served before line o (the next in turn of the two); idle and
// oIdle say whether each has an idle session of its own, and so needs to open none. b.mu is held.
func (b *Budget) needier(k key, idle bool, o key, oIdle bool) bool {
	if x, y := b.lentBy[k.owner], b.lentBy[o.owner]; x != y {
		return x < y
	}
	// A line whose run has waited past OldestAfter is not left behind by the ratios below (its
	// sessions may all be busy with long runs): the oldest run goes first.
	if ks, os := b.lines[k][0].since, b.lines[o][0].since; !ks.Equal(os) {
		oldest := ks
		if os.Before(ks) {
			oldest = os
		}
		if time.Since(oldest) > b.oldestAfter() {
			return ks.Before(os)
		}
	}
	switch {
	case idle && !oIdle:
		return !b.moves(k, o)
	case oIdle && !idle:
		return b.moves(o, k)
	}
	// The runs waiting for each session a line holds, compared without dividing: a line that holds
	// none waits the longest.
	return len(b.lines[k])*b.held(o) > len(b.lines[o])*b.held(k)
}

// moves reports whether a session idle for line from is better closed for line to to open one:
// when to holds none, or when to's runs would still wait at least as long for each of its sessions as
// from's for each of theirs once the session has moved. A line that holds one session fewer than
// another for the same work keeps it so, rather than trading a session back and forth at the cost
// of a new connection each time. b.mu is held.
func (b *Budget) moves(from, to key) bool {
	toHeld := b.held(to)
	if toHeld == 0 {
		return true
	}
	return len(b.lines[to])*(b.held(from)-1) >= len(b.lines[from])*(toHeld+1)
}

// oldestAfter is OldestAfter or its default.
func (b *Budget) oldestAfter() time.Duration {
	if b.OldestAfter > 0 {
		return b.OldestAfter
	}
	return time.Second
}

// held is how many sessions line k holds: lent to its runs, or idle for them. b.mu is held.
func (b *Budget) held(k key) int {
	n := k.pool.lentBy[k.owner]
	for _, s := range b.idle {
		if s.key == k {
			n++
		}
	}
	return n
}

// hasIdle reports whether line k has an idle session of its own it may take. b.mu is held.
func (b *Budget) hasIdle(k key) bool {
	p := k.pool
	if p.lent >= p.max || p.lentBy[k.owner] >= share(p.max) || b.startsFull() {
		return false
	}
	for _, s := range b.idle {
		if s.key == k {
			return true
		}
	}
	return false
}

// pop takes the first waiter of line k off its line. b.mu is held.
func (b *Budget) pop(k key) *waiter {
	line := b.lines[k]
	w := line[0]
	if len(line) == 1 {
		b.leave(k)
	} else {
		b.lines[k] = line[1:]
	}
	return w
}

// leave removes line k, which is empty. b.mu is held.
func (b *Budget) leave(k key) {
	delete(b.lines, k)
	for i, t := range b.turns {
		if t == k {
			b.turns = append(b.turns[:i], b.turns[i+1:]...)
			if i < b.turn {
				b.turn--
			}
			break
		}
	}
	b.quietIfOnlyPaced()
}

// quietIfOnlyPaced closes the channel of Quiet once no run waits in line but for its owner's next
// login: those wait for time, not for the server. b.mu is held.
func (b *Budget) quietIfOnlyPaced() {
	if b.quiet != nil && !b.waitingForRoom() {
		close(b.quiet)
		b.quiet = nil
	}
}

// Quiet returns a channel that is closed once no run waits in line for a session of the budget
// (but runs waiting for their owners' next logins): closed already when none waits now.
// Bookkeeping that can wait (recording the runs that ended, writing plans) waits for it, so that it
// takes no server time from the runs still waiting.
func (b *Budget) Quiet() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.waitingForRoom() {
		done := make(chan struct{})
		close(done)
		return done
	}
	if b.quiet == nil {
		b.quiet = make(chan struct{})
	}
	return b.quiet
}
