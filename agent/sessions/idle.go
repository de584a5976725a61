package sessions

import (
	"context"
	"sync"
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
			b.closed(s.key.owner)
			b.closing = append(b.closing, s.Conn)
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

// Warm opens sessions of owner ahead of a fire until n are idle, as far as no run waits and the
// pool stays within an even share of the budget among the pools; these n are kept for the fire
// for KeepWarmed. When the budget is full, it closes for each an idle session of a pool holding
// more than its share: sessions move between databases ahead of a busy minute, not at it. It
// returns when they are open.
func (p *Pool) Warm(ctx context.Context, owner string, n int) {
	b := p.budget
	k := key{p, owner}
	b.mu.Lock()
	permits := 0
	if len(b.turns) == 0 && !p.closed {
		share := max(1, (b.lendable()+b.pools-1)/max(1, b.pools)) // rounded up: the whole budget is warmed
		n = min(n, share-p.lent)
		for _, s := range b.idle {
			if s.key == k && n > 0 {
				b.keep(s)
				n--
			}
		}
		for ; permits < n; permits++ {
			evict, ok := b.room(k)
			if !ok {
				break
			}
			if evict != nil {
				if evict = b.overShare(k, share); evict == nil {
					break
				}
			}
			b.permit(k, evict)
		}
	}
	b.unlock()
	var opening sync.WaitGroup
	for range permits {
		opening.Add(1)
		go func() {
			defer opening.Done()
			s, err := p.openSession(ctx, owner)
			b.mu.Lock()
			defer b.unlock()
			if err != nil {
				b.unlend(k)
				b.closed(owner)
				if Refused(err) {
					b.refused(k, err)
				}
				b.dispatch()
				return
			}
			b.giveBack(s, true)
			b.keep(s)
			b.dispatch()
		}()
	}
	opening.Wait()
}

// overShare returns the oldest idle session line k may close to open its own, of a pool that holds
// more than share sessions (lent or idle); nil when there is none. b.mu is held.
func (b *Budget) overShare(k key, share int) *Session {
	held := map[*Pool]int{}
	for _, s := range b.idle {
		held[s.key.pool]++
	}
	ownerFull := b.byOwner[k.owner] >= b.ownerLimit()
	now := time.Now()
	for _, s := range b.idle { // the oldest first
		if s.key.pool != k.pool && held[s.key.pool]+s.key.pool.lent > share && (!ownerFull || s.key.owner == k.owner) && !now.Before(s.keepUntil) {
			return s
		}
	}
	return nil
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
	if !p.closed {
		b.pools--
	}
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
			b.closed(s.key.owner)
			b.closing = append(b.closing, s.Conn)
		} else {
			kept = append(kept, s)
		}
	}
	b.idle = kept
}
