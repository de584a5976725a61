package sessions

import (
	"context"
	"time"
)

// Logins: every session the agent opens is a login as its owner. The agent computes the owner's
// SCRAM proof (up to scram_iterations: about 3 ms of a core at the default) and the server starts
// a backend. An owner whose runs open session after session (tasks of count=1, runs that end their
// own session) would take that CPU from every other owner: 40 logins a second of one role made
// another role's tasks start up to 228 ms late (the README-only attack of 2026-11-27). So each
// owner's runs may open LoginBurst sessions at once, and LoginRate a second after that, in all the
// databases of the server together (a token bucket), a remote task's connection and each of its
// SCRAM logins past the first counting too; its runs beyond wait in line while other owners' runs
// go on, and are served again when its next login is due. Sessions warmed ahead of a job's fire
// do not count: the planner opens them, at most a share of the budget per database and minute,
// and the runs of the minute use them. A run waiting only for its owner's next login holds up
// neither warming nor the bookkeeping that waits for the lines to be served (Quiet).

const (
	// DefaultLoginBurst is Budget.LoginBurst's default: more than the sessions one owner's runs
	// opened at a busy minute of make bench (17 for 1,000 runs over 10 databases, after warming).
	DefaultLoginBurst = 64
	// DefaultLoginRate is Budget.LoginRate's default, in logins a second: at most about 5% of a
	// core of the agent's per owner at the default scram_iterations.
	DefaultLoginRate = 10
)

// loginBucket is what an owner may still log in: tokens logins, counted at at.
type loginBucket struct {
	tokens float64
	at     time.Time
}

// loginBurst is LoginBurst or its default.
func (b *Budget) loginBurst() float64 {
	if b.LoginBurst > 0 {
		return float64(b.LoginBurst)
	}
	return DefaultLoginBurst
}

// loginRate is LoginRate or its default, within 0.01 and 1,000,000 a second.
func (b *Budget) loginRate() float64 {
	if b.LoginRate > 0 {
		return min(max(b.LoginRate, 0.01), 1e6) // also NaN-free: +Inf is 1e6
	}
	return DefaultLoginRate
}

// loginsLeft returns the logins owner may make at now. b.mu is held.
func (b *Budget) loginsLeft(owner string, now time.Time) float64 {
	l, ok := b.logins[owner]
	if !ok {
		return b.loginBurst()
	}
	return min(b.loginBurst(), l.tokens+now.Sub(l.at).Seconds()*b.loginRate())
}

// loginWait returns how long owner waits for its next login; 0 when it may log in now. b.mu is
// held.
func (b *Budget) loginWait(owner string) time.Duration {
	left := b.loginsLeft(owner, time.Now())
	if left >= 1 {
		return 0
	}
	return time.Duration((1-left)/b.loginRate()*float64(time.Second)) + time.Millisecond
}

// loggedIn counts a session opened as owner for a run (whether the server accepts it or not), and
// forgets the owners whose logins are all back once there are many. b.mu is held.
func (b *Budget) loggedIn(owner string) {
	now := time.Now()
	if b.logins == nil {
		b.logins = map[string]loginBucket{}
	}
	if len(b.logins) >= b.loginsPruneAt {
		for o := range b.logins {
			if b.loginsLeft(o, now) >= b.loginBurst() {
				delete(b.logins, o)
			}
		}
		b.loginsPruneAt = max(64, 2*len(b.logins))
	}
	b.logins[owner] = loginBucket{tokens: b.loginsLeft(owner, now) - 1, at: now}
}

// AwaitLogin waits until owner may log in once more, and counts that login: for a connection the
// agent opens as owner outside the pools (a remote task's, to the server its string names). It
// returns ctx's cause when ctx ends first.
func (p *Pool) AwaitLogin(ctx context.Context, owner string) error {
	b := p.budget
	for {
		b.mu.Lock()
		wait := b.loginWait(owner)
		if wait <= 0 {
			b.loggedIn(owner)
		}
		b.mu.Unlock()
		if wait <= 0 {
			return nil
		}
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return context.Cause(ctx)
		}
	}
}

// ChargeLogins counts n more logins of owner made outside the pools without waiting for them (the
// further SCRAM logins of a remote task's connection, past the one AwaitLogin counted; a session
// that ends a run's backend): its next ones wait that much longer. n <= 0 counts nothing.
func (p *Pool) ChargeLogins(owner string, n int) {
	b := p.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	for range n {
		b.loggedIn(owner)
	}
}

// waitingForRoom reports whether a run waits in line for a session, not only for its owner's next
// login: warming waits for such runs to be served, bookkeeping too (Quiet). b.mu is held.
func (b *Budget) waitingForRoom() bool {
	for _, k := range b.turns {
		if b.loginWait(k.owner) <= 0 {
			return true
		}
	}
	return false
}
