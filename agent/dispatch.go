package agent

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// dispatcher is a term's wake-up dispatcher: the one listener on the leader session, which hands
// each notification to the channel of its topic, so that each service waits on its own. Several
// notifications of a topic before its service looks are one wake-up: a flood costs a service no
// more than one.
type dispatcher struct {
	conn   *pgx.Conn
	topics map[string]chan struct{}
}

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

// listen hands out the notifications until ctx ends (nil), or returns why the session failed. The
// connection is the listener's until listen returns.
func (d *dispatcher) listen(ctx context.Context) error {
	for {
		n, err := d.conn.WaitForNotification(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
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
