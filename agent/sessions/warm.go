package sessions

import (
	"context"
	"sync"
	"time"
)

// Warming: sessions opened ahead of a fire, shared evenly between the pools that warm, so that at a
// busy minute every database starts its runs on sessions of its own rather than the first to fire
// taking the budget and the others waiting for it.

// Warm opens sessions of owner ahead of a fire until n are idle, as far as no run waits and the
// pool stays within an even share of the budget among the pools that warm (the share rounded up,
// as long as each other such pool can still warm the share rounded down); these n are kept for
// the fire for KeepWarmed. When the budget is full, it closes for each an idle session of a pool
// holding at least two more than this one: sessions move between databases ahead of a busy
// minute, not at it. It returns when they are open.
func (p *Pool) Warm(ctx context.Context, owner string, n int) {
	b := p.budget
	k := key{p, owner}
	b.mu.Lock()
	permits := 0
	if !b.waitingForRoom() && !p.closed {
		least, most := b.warmShares()
		// No more than may start at once: a session beyond serves a run only once another has
		// started, which an open session of the line serves as well, and each costs the server a
		// start and a first run with cold caches.
		n = min(n, most-p.lent, b.startingMax())
		b.closeDead(k)
		for _, s := range b.idle {
			if s.key == k && n > 0 {
				b.keep(s)
				n--
			}
		}
		for ; permits < n; permits++ {
			evict, ok := b.room(k, nil)
			if !ok {
				break
			}
			if evict != nil || !b.leavesShares(k, least) {
				if evict = b.overShare(k); evict == nil {
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

// warmShares returns the even share of the budget's lendable sessions of each pool that warms,
// rounded down (0 when the pools outnumber the sessions: the first to warm take one each) and up.
// b.mu is held.
func (b *Budget) warmShares() (least, most int) {
	pools := max(1, len(b.warming))
	return b.lendable() / pools, max(1, (b.lendable()+pools-1)/pools)
}

// pooled returns how many sessions each pool that warms or has idle sessions holds: lent (or being
// opened) and idle. b.mu is held.
func (b *Budget) pooled() map[*Pool]int {
	held := map[*Pool]int{}
	for p := range b.warming {
		held[p] = p.lent
	}
	for _, s := range b.idle {
		p := s.key.pool
		if _, ok := held[p]; !ok {
			held[p] = p.lent
		}
		held[p]++
	}
	return held
}

// leavesShares reports whether line k may open one more session: within the budget and the
// owner's limit, and, once k's pool holds least sessions, still leaving room for every other pool
// that warms to reach least. b.mu is held.
func (b *Budget) leavesShares(k key, least int) bool {
	free := min(b.lendable()-b.open, b.ownerLimit()-b.byOwner[k.owner]) - 1
	held := b.pooled()
	if held[k.pool] < least {
		return free >= 0 // the others' shares are not k's to keep while k is below its own
	}
	for q := range b.warming {
		if q != k.pool && !q.closed && held[q] < least {
			free -= least - held[q]
		}
	}
	return free >= 0
}

// overShare returns the oldest idle session line k may close to open its own, of a pool that holds
// at least two sessions (lent or idle) more than k's; nil when there is none. b.mu is held.
func (b *Budget) overShare(k key) *Session {
	held := b.pooled()
	mine, ok := held[k.pool]
	if !ok {
		mine = k.pool.lent
	}
	ownerFull := b.byOwner[k.owner] >= b.ownerLimit()
	now := time.Now()
	for _, s := range b.idle { // the oldest first
		if s.key.pool != k.pool && held[s.key.pool] >= mine+2 && (!ownerFull || s.key.owner == k.owner) && !now.Before(s.keepUntil) {
			return s
		}
	}
	return nil
}
