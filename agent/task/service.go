// Package task is the database agent's task service: it runs the SQL texts roles insert into the
// task table (docs/tasks.md), each as its owner on a session of the server's budget, and writes
// the output or the error back into the row.
package task

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/agent/sessions"
	"github.com/pgjobs/pgjobs/internal/clock"
	"github.com/pgjobs/pgjobs/internal/metrics"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// resetAgain is how soon the service looks again at the tasks an agent that died left running on a
// session the server has not ended yet.
const resetAgain = 5 * time.Second

// drainWrites bounds the last write of a term that ends on a stop.
const drainWrites = 30 * time.Second

// Config is what the task service of a database is given once, for all its terms.
type Config struct {
	Clock    clock.Clock    // the waits for the next plan
	Location *time.Location // the zone in which days and months of repeat intervals are counted
	Log      *slog.Logger
	Sessions *sessions.Pool // sessions of the tasks' owners, from the server's budget
	Slots    int            // tasks run at once, at most
	// OnWritten, if not nil, is called after starts or ends of tasks were written.
	OnWritten func()
	// OnClaimed, if not nil, is called after each claim with how long it took and what it claimed.
	OnClaimed func(took time.Duration, claimed int)
	// Metrics counts the tasks' waits, runs and ends; nil counts nothing.
	Metrics *metrics.Database
	// MaxIterations, if not nil, gives the most SCRAM iterations the agent computes to log in to a
	// remote task's server; nil or 0 means authwatch.DefaultMaxIterations.
	MaxIterations func() int
}

// Term is what a leadership term gives the task service.
type Term struct {
	Epoch   int64           // the lead's: every claim and write carries it
	Records *pgxpool.Pool   // the agent's own sessions
	Wake    <-chan struct{} // a task was inserted, or a plan or state changed (pgjobs_task)
	// UpkeepDue is poked after ends were written: the upkeep deletes old tasks.
	UpkeepDue chan<- struct{}
	// Progress is when the service left its wait (Unix ns), 0 while it waits: the term's watch for
	// sessions of other roles that hold pgjobs' tables up looks at it.
	Progress *atomic.Int64
	// Stopping ends on a soft stop of the agent: Run then waits for the runs and writes their ends
	// before it returns. When the term ends otherwise, the runs go on into the next term.
	Stopping context.Context
}

// Service runs the tasks of one database. Its runs outlive the terms: they go on until the context
// given to New ends, and their ends are written in the next term if the session was lost.
type Service struct {
	cfg    Config
	runCtx context.Context
	runs   sync.WaitGroup
	writes *writer

	mu        sync.Mutex
	running   map[int64]runEntry  // tasks claimed by this agent whose end is not written yet
	pending   int                 // of those, the tasks not run yet or running
	holding   map[uint32]int      // the slots each role's runs hold
	held      int                 // the slots all runs hold
	queued    map[uint32][]uint64 // each role\'s runs waiting for a slot, in claim order
	tickets   uint64
	live      int64         // the epoch of the term serving now, 0 when none
	slotFreed *sync.Cond    // a role gave a slot back (on mu)
	key       termKey       // the proofs' key of the term the runs start in
	freed     chan struct{} // runs ended or ends were written: the loop may claim more

	// Since when the loop has been away from its wait, or failing, and since when the writes have
	// been failing (Unix ns, 0 when not): the term's Progress is the earlier.
	lookSince, writeSince atomic.Int64
	needReset             atomic.Bool // runs claimed by an ended term were left: reset them
}

// trouble marks since (lookSince or writeSince) busy from now, unless it is already, and publishes
// the earlier of the two to progress.
func (s *Service) trouble(since *atomic.Int64, progress *atomic.Int64) {
	since.CompareAndSwap(0, time.Now().UnixNano())
	s.publish(progress)
}

// untroubled clears since and publishes.
func (s *Service) untroubled(since *atomic.Int64, progress *atomic.Int64) {
	since.Store(0)
	s.publish(progress)
}

func (s *Service) publish(progress *atomic.Int64) {
	a, b := s.lookSince.Load(), s.writeSince.Load()
	if a == 0 || (b != 0 && b < a) {
		a = b
	}
	progress.Store(a)
}

// New returns the task service of a database; its runs are cancelled when runCtx ends.
func New(runCtx context.Context, cfg Config) *Service {
	if cfg.Slots < 1 {
		cfg.Slots = 1
	}
	s := &Service{cfg: cfg, runCtx: runCtx, writes: newWriter(), running: map[int64]runEntry{}, holding: map[uint32]int{}, queued: map[uint32][]uint64{}, freed: make(chan struct{}, 1)}
	s.slotFreed = sync.NewCond(&s.mu)
	context.AfterFunc(runCtx, func() { // the runs waiting for a slot give up
		s.mu.Lock() // no waiter misses the broadcast between its check and its wait
		defer s.mu.Unlock()
		s.slotFreed.Broadcast()
	})
	return s
}

func (s *Service) logf(level slog.Level, status, format string, args ...any) {
	s.cfg.Log.Log(context.Background(), level, fmt.Sprintf(format, args...), "status", status)
}

// mine returns the tasks this agent runs or has yet to write the end of.
func (s *Service) mine() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.running))
	for id := range s.running {
		ids = append(ids, id)
	}
	return ids
}

// Wait waits until the runs in flight have ended.
func (s *Service) Wait() { s.runs.Wait() }

// Run serves the tasks for one term until ctx ends (nil) or the term fails: it resets the tasks an
// agent that died left claimed or running, then claims what is ready whenever a task is inserted or
// changed (notified on Wake), a plan comes, or a run's end frees a slot, and sleeps otherwise. On a
// stop it waits for the runs and writes their ends before it returns.
func (s *Service) Run(ctx context.Context, t Term) error {
	if t.Progress == nil {
		t.Progress = &atomic.Int64{}
	}
	loopCtx, stopLoop := context.WithCancel(ctx)
	defer stopLoop()
	writerDone := make(chan struct{}) // closed when the writer's loop has returned writerErr
	var writerErr error
	go func() {
		defer close(writerDone)
		writerErr = s.writes.loop(loopCtx, t.Records, t.Epoch, func(ends []sqlschema.TaskEnd, err error) {
			if len(ends) > 0 {
				s.written(ends) // before the error too: what was written frees its slots
			}
			if err != nil {
				s.trouble(&s.writeSince, t.Progress)
				s.logf(agentlog.LevelError, agentlog.StatusFiring, "could not write the tasks' results (retrying): %v", err)
				return
			}
			s.untroubled(&s.writeSince, t.Progress)
			if s.cfg.OnWritten != nil {
				s.cfg.OnWritten()
			}
			if len(ends) > 0 {
				select {
				case t.UpkeepDue <- struct{}{}:
				default:
				}
			}
		})
	}()
	s.writes.wake() // ends left from the term before
	s.setLive(t.Epoch)
	defer s.setLive(0) // after the drain: a soft stop runs what it claimed
	err := s.serve(loopCtx, t, writerDone)
	stopLoop()
	<-writerDone
	s.lookSince.Store(0)
	s.writeSince.Store(0)
	if err == nil {
		err = writerErr
	}
	if err == nil && t.Stopping != nil && t.Stopping.Err() != nil {
		s.drain(t)
	}
	return err
}

// serve is Run's loop. A failure of a statement (a lock it waited for too long, say) is logged
// and tried again a second later; only the loss of the lead ends it before ctx does.
func (s *Service) serve(ctx context.Context, t Term, writerDone <-chan struct{}) error {
	var resetDue <-chan time.Time
	resetNeeded := true
	for {
		// While its statements fail (a lock held up), the loop counts as away from its wait since
		// the first failure: the watch for intruders wakes after 2 s of it.
		s.trouble(&s.lookSince, t.Progress)
		next, err := s.look(ctx, t, &resetNeeded, &resetDue)
		if errors.Is(err, sqlschema.ErrLostLead) {
			return err
		}
		if err == nil {
			s.untroubled(&s.lookSince, t.Progress)
		}
		var timer clock.Timer
		var due <-chan time.Time
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil
			}
			s.logf(agentlog.LevelError, agentlog.StatusFiring, "tasks: %v; trying again in %s", err, retryLook)
			timer = s.cfg.Clock.NewTimer(retryLook)
		case next > 0:
			timer = s.cfg.Clock.NewTimer(next)
		}
		if timer != nil {
			due = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-writerDone: // it failed: the lead is lost
			return nil
		case <-t.Wake:
		case <-due:
		case <-s.freed:
		case <-resetDue:
			resetNeeded = true
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// retryLook is the pause before the service looks at the tasks again after a statement failed.
const retryLook = time.Second

// look resets the tasks of an agent gone when *resetNeeded, claims and starts what is ready, and
// returns how long the service may sleep before it looks again (0: until woken).
func (s *Service) look(ctx context.Context, t Term, resetNeeded *bool, resetDue *<-chan time.Time) (time.Duration, error) {
	if err := s.keyTerm(ctx, t); err != nil {
		return 0, err
	}
	if s.needReset.Swap(false) {
		*resetNeeded = true // runs of an earlier term left their claims
	}
	if *resetNeeded {
		n, running, err := sqlschema.TaskReset(ctx, t.Records, t.Epoch, s.mine())
		if err != nil {
			return 0, err
		}
		if err := s.adopt(ctx, t); err != nil {
			return 0, err
		}
		*resetNeeded, *resetDue = false, nil
		s.cfg.Metrics.TasksReset(int(n))
		if n > 0 {
			s.logf(agentlog.LevelEssential, agentlog.StatusStarting, "%d tasks left claimed or running by an agent gone were put back to PLAN: they run again", n)
		}
		if running > 0 {
			*resetDue = time.After(resetAgain)
		}
	}
	// The next plan is read before the claim: a row that becomes ready between the two is either
	// claimed, or in the next plan read; read after, it would be neither, and sleep.
	now, plan, expiry, err := sqlschema.TaskNext(ctx, t.Records)
	if err != nil {
		return 0, err
	}
	asked := time.Now()
	claimed, err := sqlschema.TaskClaim(ctx, t.Records, t.Epoch, s.free(), s.claimCap(), s.ended())
	if err != nil {
		*resetNeeded = true // rows it may have claimed before failing are put back by the next look
		return 0, err
	}
	if s.cfg.OnClaimed != nil {
		s.cfg.OnClaimed(time.Since(asked), len(claimed))
	}
	for _, task := range claimed {
		s.start(task)
	}
	var wait time.Duration // 0: until woken
	if plan != nil {
		wait = max(plan.Sub(now)-time.Since(asked), time.Millisecond)
	}
	if expiry != nil {
		// One past already: the claim just ended it, or its owner holds its row locked. Look again
		// a little later rather than at once.
		until := retryLook
		if expiry.After(now) {
			until = max(expiry.Sub(now)-time.Since(asked), time.Millisecond)
		}
		if wait == 0 || until < wait {
			wait = until
		}
	}
	return wait, nil
}

// drain waits for the runs after a stop and writes their ends.
func (s *Service) drain(t Term) {
	s.runs.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), drainWrites)
	defer cancel()
	ends, held, err := s.writes.flush(ctx, t.Records, t.Epoch)
	if len(ends) > 0 {
		s.written(ends)
	}
	switch {
	case err != nil:
		s.logf(agentlog.LevelError, agentlog.StatusStopping, "%d task results could not be written: %v; the next agent ends those whose work committed (their output lost) and runs the others again", s.writes.pending(), err)
	case held:
		s.logf(agentlog.LevelError, agentlog.StatusStopping, "%d task results could not be written: their rows were locked by other sessions; the next agent ends those whose work committed (their output lost) and runs the others again", s.writes.pending())
	}
}

// written forgets the tasks whose ends were written and frees their slots.
func (s *Service) written(ends []sqlschema.TaskEnd) {
	s.mu.Lock()
	for _, e := range ends {
		if r, ok := s.running[e.ID]; ok && r.attempt == e.Attempt { // not a later attempt's, claimed meanwhile
			delete(s.running, e.ID)
		}
	}
	s.mu.Unlock()
	select {
	case s.freed <- struct{}{}:
	default:
	}
}
