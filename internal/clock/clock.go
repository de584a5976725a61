// Package clock tells the time and makes timers, so that tests can drive time instead of sleeping.
package clock

import "time"

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is a timer of a Clock.
type Timer interface {
	// C delivers the time when the timer fires.
	C() <-chan time.Time
	// Stop stops the timer; it reports whether the timer was still running.
	Stop() bool
}

// Real is the system clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }
