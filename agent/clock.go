package agent

import "github.com/pgjobs/pgjobs/internal/clock"

// Clock tells the time and makes timers; the agent takes one so that tests can drive schedules
// in milliseconds. It is clock.Clock, named here for the agent's callers.
type Clock = clock.Clock

// Timer is a timer of a Clock.
type Timer = clock.Timer

// RealClock is the system clock.
type RealClock = clock.Real
