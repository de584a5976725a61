package sessions

import (
	"time"
)

// Idle sessions: opened ahead of a fire, kept for their owner's next run, closed after a while or
// when their database agent resets or closes its pool.

// armIdleTimer makes sure idle sessions are closed once they have been idle for IdleTimeout. b.mu
// is held.
func (b *Budget) armIdleTimer() {
	if b.idleTimer != nil || len(b.idle) == 0 {
		return
	}
	b.idleTimer = time.AfterFunc(time.Until(b.idle[0].idleSince.Add(b.idleTimeout())), func() {
		b.mu.Lock()
		defer b.unlock()
		b.idleTimer = nil
		for len(b.idle) > 0 && time.Since(b.idle[0].idleSince) >= b.idleTimeout() {
			s := b.idle[0]
			b.idle = b.idle[1:]
			b.closeSession(s)
		}
		b.armIdleTimer()
		b.dispatch() // a closed session makes room
	})
}

// keepWarmed is how long a session warmed for a fire is kept from other lines: the other database
// agents' runs of the same minute close no session a fire is about to use.
func (b *Budget) keepWarmed() time.Duration {
	if b.KeepWarmed > 0 {
		return b.KeepWarmed
	}
	return 5 * time.Second
}

// keep keeps s for its fire, and serves the lines once it is no longer kept: a run waiting for
// room then closes it if its fire did not take it. b.mu is held.
func (b *Budget) keep(s *Session) {
	s.keepUntil = time.Now().Add(b.keepWarmed())
	b.armKeepTimer()
}

// armKeepTimer makes sure the lines are served when the earliest kept idle session is kept no
// longer; every keep lasts as long, so a later one never needs the timer sooner. b.mu is held.
func (b *Budget) armKeepTimer() {
	if b.keepTimer != nil {
		return
	}
	var until time.Time
	for _, s := range b.idle {
		if s.keepUntil.After(time.Now()) && (until.IsZero() || s.keepUntil.Before(until)) {
			until = s.keepUntil
		}
	}
	if until.IsZero() {
		return
	}
	b.keepTimer = time.AfterFunc(time.Until(until), func() {
		b.mu.Lock()
		defer b.unlock()
		b.keepTimer = nil
		b.dispatch()
		b.armKeepTimer()
	})
}

func (b *Budget) idleTimeout() time.Duration {
	if b.IdleTimeout > 0 {
		return b.IdleTimeout
	}
	return 5 * time.Minute
}

// Reset closes the pool's idle sessions: after an outage they may be as dead as the leader's.
func (p *Pool) Reset() {
	b := p.budget
	b.mu.Lock()
	defer b.unlock()
	p.closeIdle()
	b.dispatch()
}

// Close closes the pool: its idle sessions now, its lent ones when they are given back; runs in its
// lines get ErrPoolClosed.
func (p *Pool) Close() {
	b := p.budget
	b.mu.Lock()
	defer b.unlock()
	delete(b.warming, p)
	p.closed = true
	b.forget(p)
	p.closeIdle()
	for k := range b.lines {
		if k.pool == p {
			for _, w := range b.lines[k] {
				w.grant <- grant{}
			}
			b.leave(k)
		}
	}
	b.dispatch()
}

// closeIdle closes the pool's idle sessions. b.mu is held.
func (p *Pool) closeIdle() {
	b := p.budget
	kept := b.idle[:0]
	for _, s := range b.idle {
		if s.key.pool == p {
			b.closeSession(s)
		} else {
			kept = append(kept, s)
		}
	}
	b.idle = kept
}
