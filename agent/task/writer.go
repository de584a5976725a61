package task

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// writeRetry is the pause before writing again what failed to be written (the database did not
// answer); nothing is dropped meanwhile.
const writeRetry = time.Second

// writer writes the tasks' starts and ends in batches, in the order they came: a start before the
// end of the same attempt. What could not be written stays for the next try, or the next term.
type writer struct {
	mu      sync.Mutex
	started []sqlschema.TaskStarted
	ends    []sqlschema.TaskEnd
	kick    chan struct{} // something waits to be written
}

func newWriter() *writer { return &writer{kick: make(chan struct{}, 1)} }

func (w *writer) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// start queues the start of a task's attempt.
func (w *writer) start(s sqlschema.TaskStarted) {
	w.mu.Lock()
	w.started = append(w.started, s)
	w.mu.Unlock()
	w.wake()
}

// end queues the end of a task's attempt.
func (w *writer) end(e sqlschema.TaskEnd) {
	w.mu.Lock()
	w.ends = append(w.ends, e)
	w.mu.Unlock()
	w.wake()
}

// pending returns how many writes wait.
func (w *writer) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.started) + len(w.ends)
}

// flush writes what waits, in one transaction, and returns the ends it wrote (also those whose row
// had moved on: they are done with), and whether some ends stay queued because another session
// held their row locked. On failure everything stays queued, in order.
func (w *writer) flush(ctx context.Context, records *pgxpool.Pool, epoch int64) (written []sqlschema.TaskEnd, held bool, err error) {
	w.mu.Lock()
	started, ends := w.started, w.ends
	w.started, w.ends = nil, nil
	w.mu.Unlock()
	if len(started) == 0 && len(ends) == 0 {
		return nil, false, nil
	}
	busy, err := sqlschema.TaskWrite(ctx, records, epoch, started, ends)
	var pgErr *pgconn.PgError
	if err != nil && errors.As(err, &pgErr) && !errors.Is(err, sqlschema.ErrLostLead) {
		// The server refused something of the batch (a result it cannot store): one at a time, so
		// that one task's write never holds up the others.
		started, ends, written, held, err = w.each(ctx, records, epoch, started, ends)
		if err == nil {
			return written, held, nil
		}
	}
	if err != nil {
		w.mu.Lock()
		w.started, w.ends = append(started, w.started...), append(ends, w.ends...)
		w.mu.Unlock()
		return written, false, err // written: what each wrote before the database failed
	}
	if len(busy) == 0 {
		return ends, false, nil
	}
	w.mu.Lock()
	w.ends = append(busy, w.ends...)
	w.mu.Unlock()
	for _, e := range ends {
		if !slices.ContainsFunc(busy, func(b sqlschema.TaskEnd) bool { return b.ID == e.ID && b.Attempt == e.Attempt }) {
			written = append(written, e)
		}
	}
	return written, true, nil
}

// each writes the starts and ends one at a time; an end whose result the server refuses is written
// with an error saying so instead. It returns what it could not write when the database failed
// (to queue again), the ends written, and whether some stay queued, their rows held locked.
func (w *writer) each(ctx context.Context, records *pgxpool.Pool, epoch int64, started []sqlschema.TaskStarted, ends []sqlschema.TaskEnd) (
	restStarted []sqlschema.TaskStarted, restEnds []sqlschema.TaskEnd, written []sqlschema.TaskEnd, held bool, err error) {
	var pgErr *pgconn.PgError
	for i, s := range started {
		if _, err := sqlschema.TaskWrite(ctx, records, epoch, []sqlschema.TaskStarted{s}, nil); err != nil && !errors.As(err, &pgErr) {
			return started[i:], ends, written, held, err
		}
	}
	for i, e := range ends {
		busy, err := sqlschema.TaskWrite(ctx, records, epoch, nil, []sqlschema.TaskEnd{e})
		if err != nil && errors.As(err, &pgErr) && !errors.Is(err, sqlschema.ErrLostLead) {
			text := AgentErrorText(fmt.Sprintf("the task's result could not be stored: %s", pgErr.Message), "")
			e.Output, e.Error, e.RetryAt = nil, &text, nil
			busy, err = sqlschema.TaskWrite(ctx, records, epoch, nil, []sqlschema.TaskEnd{e})
			if err != nil && errors.As(err, &pgErr) && !errors.Is(err, sqlschema.ErrLostLead) {
				written = append(written, e) // dropped: the next agent's reset runs it again
				continue
			}
		}
		if err != nil {
			return nil, ends[i:], written, held, err
		}
		if len(busy) > 0 {
			held = true
			w.mu.Lock()
			w.ends = append(w.ends, busy...)
			w.mu.Unlock()
			continue
		}
		written = append(written, e)
	}
	return nil, nil, written, held, nil
}

// loop writes whenever something is queued, until ctx ends; after each try it calls flushed with
// the ends written, or the error. It fails only with ErrLostLead: other failures are retried after
// writeRetry, and the ends whose rows were held locked are tried again then too, while other
// writes go on meanwhile.
func (w *writer) loop(ctx context.Context, records *pgxpool.Pool, epoch int64, flushed func([]sqlschema.TaskEnd, error)) error {
	var again <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-w.kick:
		case <-again:
			again = nil
		}
		ends, held, err := w.flush(ctx, records, epoch)
		if errors.Is(err, sqlschema.ErrLostLead) {
			return err
		}
		flushed(ends, err) // also when ctx ended meanwhile: what was written frees its slots
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(writeRetry):
			}
			w.wake()
			continue
		}
		if held && again == nil {
			again = time.After(writeRetry)
		}
	}
}
