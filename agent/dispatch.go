package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// dispatcher is a term's wake-up dispatcher: the one listener on the leader session, which hands
// each notification to the channel of its topic, so that each service waits on its own. Several
// notifications of a topic before its service looks are one wake-up: a flood costs a service no
// more than one.
//
// Between two waits it also runs the calls of do on the leader session: the answers to the
// standbys and the watch for intruders, which so never wait for the agent's record session.
type dispatcher struct {
	conn   *pgx.Conn
	topics map[string]chan struct{}

	mu        sync.Mutex
	calls     []leaderCall
	interrupt context.CancelFunc // ends the current wait for a call; nil while not waiting
	ended     bool               // listen returned: calls fail
}

// leaderCall is a statement (or a few) to run on the leader session.
type leaderCall struct {
	fn   func(context.Context, *pgx.Conn) error
	done chan error
}

// leaderCallTimeout bounds a call on the leader session: it waits for no lock longer (lockWait)
// and the notifications wait no longer.
const leaderCallTimeout = lockWait + time.Second

// errListenerEnded is do's error once the term's listener has ended.
var errListenerEnded = errors.New("the leader session's listener ended")

// newDispatcher returns the dispatcher of the leader session conn; its topics are the channels it
// listens on.
func newDispatcher(conn *pgx.Conn) *dispatcher {
	return &dispatcher{conn: conn, topics: map[string]chan struct{}{}}
}

// topic returns the channel that wakes a service when the channel name is notified. Every topic is
// asked for before listen starts.
func (d *dispatcher) topic(name string) <-chan struct{} {
	c, ok := d.topics[name]
	if !ok {
		c = make(chan struct{}, 1)
		d.topics[name] = c
	}
	return c
}

// do runs fn on the leader session between two waits, and returns its error; ctx bounds only the
// caller's wait (fn runs with leaderCallTimeout).
func (d *dispatcher) do(ctx context.Context, fn func(context.Context, *pgx.Conn) error) error {
	c := leaderCall{fn: fn, done: make(chan error, 1)}
	d.mu.Lock()
	if d.ended {
		d.mu.Unlock()
		return errListenerEnded
	}
	d.calls = append(d.calls, c)
	if d.interrupt != nil {
		d.interrupt()
	}
	d.mu.Unlock()
	select {
	case err := <-c.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listen hands out the notifications and runs the calls until ctx ends (nil), or returns why the
// session failed. The connection is the listener's until listen returns.
func (d *dispatcher) listen(ctx context.Context) error {
	defer d.end()
	for {
		if err := d.runCalls(ctx); err != nil {
			return err
		}
		d.mu.Lock()
		if len(d.calls) > 0 {
			d.mu.Unlock()
			continue
		}
		wait, interrupt := context.WithCancel(ctx)
		d.interrupt = interrupt
		d.mu.Unlock()
		// A wait ended by its context leaves the session as it was (the leader session's context
		// watcher sets a deadline rather than sending a cancel request).
		n, err := d.conn.WaitForNotification(wait)
		d.mu.Lock()
		d.interrupt = nil
		d.mu.Unlock()
		interrupt()
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return nil
			case wait.Err() != nil && !d.conn.IsClosed():
				continue // ended for a call
			}
			return fmt.Errorf("the database session ended: %w", err)
		}
		if c, ok := d.topics[n.Channel]; ok {
			select {
			case c <- struct{}{}:
			default: // a wake-up is due already
			}
		}
	}
}

// runCalls runs the calls waiting; an error only when the session failed.
func (d *dispatcher) runCalls(ctx context.Context) error {
	d.mu.Lock()
	calls := d.calls
	d.calls = nil
	d.mu.Unlock()
	for _, c := range calls {
		callCtx, cancel := context.WithTimeout(ctx, leaderCallTimeout)
		err := c.fn(callCtx, d.conn)
		cancel()
		c.done <- err
		if d.conn.IsClosed() {
			return fmt.Errorf("the database session ended: %w", err)
		}
	}
	return nil
}

// end fails the calls still waiting, and those to come.
func (d *dispatcher) end() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
	for _, c := range d.calls {
		c.done <- errListenerEnded
	}
	d.calls = nil
}
