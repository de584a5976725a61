// Package fakeclock is a clock for tests of the agent: time moves only when the test says.
package fakeclock

import (
	"sync"
	"time"

	"github.com/pgjobs/pgjobs/internal/clock"
)

// Clock is a clock.Clock whose time moves only with Set and Advance.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*timer]struct{}
	changed chan struct{} // closed and replaced when timers are added
}

type timer struct {
	clock *Clock
	at    time.Time
	c     chan time.Time
}

// New returns a clock that reads now.
func New(now time.Time) *Clock {
	return &Clock{now: now, timers: map[*timer]struct{}{}, changed: make(chan struct{})}
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires when the clock reaches now + d.
func (c *Clock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{clock: c, at: c.now.Add(d), c: make(chan time.Time, 1)}
	if d <= 0 {
		t.c <- c.now
		return t
	}
	c.timers[t] = struct{}{}
	close(c.changed)
	c.changed = make(chan struct{})
	return t
}

func (t *timer) C() <-chan time.Time { return t.c }

func (t *timer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	_, running := t.clock.timers[t]
	delete(t.clock.timers, t)
	return running
}

// Set moves the clock to now (forward only) and fires the timers due by then.
func (c *Clock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.After(c.now) {
		c.now = now
	}
	for t := range c.timers {
		if !t.at.After(c.now) {
			t.c <- c.now
			delete(c.timers, t)
		}
	}
}

// Advance moves the clock forward by d and fires the timers due by then.
func (c *Clock) Advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// WaitForTimer waits until some timer is set to fire at or before `at` (an agent went to
// sleep until then), and reports whether one was within the timeout.
func (c *Clock) WaitForTimer(at time.Time, timeout time.Duration) bool {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		changed := c.changed
		for t := range c.timers {
			if !t.at.After(at) {
				c.mu.Unlock()
				return true
			}
		}
		c.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			return false
		}
	}
}

// NextTimer waits until some timer is set, and returns when the earliest fires; false when none
// was set within the timeout. A test that drives an agent from wake to wake sets the clock to it.
func (c *Clock) NextTimer(timeout time.Duration) (time.Time, bool) {
	deadline := time.After(timeout)
	for {
		c.mu.Lock()
		changed := c.changed
		var earliest time.Time
		for t := range c.timers {
			if earliest.IsZero() || t.at.Before(earliest) {
				earliest = t.at
			}
		}
		c.mu.Unlock()
		if !earliest.IsZero() {
			return earliest, true
		}
		select {
		case <-changed:
		case <-deadline:
			return time.Time{}, false
		}
	}
}
