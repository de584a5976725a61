package sessions

import (
	"runtime"
	"time"
)

// The runs starting at once. On a small server, 32 short runs sent at once take longer in all
// than 16 sent in turns: the server's processes take turns on its cores (measured on 2 cores with
// the runs' own statements: the last of 500 runs started 123 ms after the first with 32 sessions,
// 88 ms with 16). So the budget lends at most StartingMax sessions to runs that started less than
// StartingFor ago; a run going on longer (a long job, waiting on a lock or a sleep) no longer counts,
// and another starts beside it. Sessions warmed ahead of a fire do not count.

// DefaultStartingMax is the most runs starting at once when Budget.StartingMax is 0: 8 per core of
// this machine (the agent usually runs on the server's), and 16 at least.
func DefaultStartingMax() int { return max(16, 8*runtime.NumCPU()) }

// start is one run counted as starting, from its grant until it gives its session back or
// StartingFor has passed since the run had its session (a session opened for it counts from the
// end of the opening).
type start struct {
	until time.Time
	done  bool
}

// startingMax is StartingMax or its default.
func (b *Budget) startingMax() int {
	if b.StartingMax > 0 {
		return b.StartingMax
	}
	return DefaultStartingMax()
}

// startingFor is StartingFor or its default.
func (b *Budget) startingFor() time.Duration {
	if b.StartingFor > 0 {
		return b.StartingFor
	}
	return 50 * time.Millisecond
}

// startsFull reports whether as many runs are starting as may. b.mu is held.
func (b *Budget) startsFull() bool {
	b.expireStarts(time.Now())
	return b.startingN >= b.startingMax()
}

// beginStart counts a run granted a session as starting. b.mu is held.
func (b *Budget) beginStart() *start {
	s := &start{until: time.Now().Add(b.startingFor())}
	b.starts = append(b.starts, s)
	b.startingN++
	b.armStartTimer()
	return s
}

// endStart counts s as no longer starting: its run gave its session back, or never had it. b.mu is
// held.
func (b *Budget) endStart(s *start) {
	if s != nil && !s.done {
		s.done = true
		b.startingN--
	}
}

// expireStarts counts the runs granted StartingFor before now as no longer starting. b.mu is held.
func (b *Budget) expireStarts(now time.Time) {
	n := 0
	for _, s := range b.starts {
		if now.Before(s.until) {
			break
		}
		b.endStart(s)
		n++
	}
	if n > 0 {
		b.starts = append(b.starts[:0], b.starts[n:]...)
	}
	for len(b.starts) > 0 && b.starts[0].done {
		b.starts = b.starts[1:] // given back early: nothing left to count
	}
}

// armStartTimer serves the lines again when the oldest starting run stops counting, if runs wait
// for that. b.mu is held.
func (b *Budget) armStartTimer() {
	if len(b.starts) == 0 || b.startTimer != nil {
		return
	}
	b.startTimer = time.AfterFunc(time.Until(b.starts[0].until), func() {
		b.mu.Lock()
		defer b.unlock()
		b.startTimer = nil
		b.expireStarts(time.Now())
		b.dispatch()
		b.armStartTimer()
	})
}
