package task

import "slices"

// The slots: how many tasks the service claims ahead, and which of its runs may start.

// The tasks the service holds claimed are more than its slots, so that a slot freed by a run's end
// is taken at once by a task claimed before, without a claim's commit in between, and the ends are
// written many at a time: claimAhead × slots claimed and not run yet or running, and at most
// unwrittenPerSlot × slots claimed whose end is not written yet.
const (
	claimAhead       = 4
	unwrittenPerSlot = 16
)

// free returns how many more tasks the service may claim.
func (s *Service) free() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(0, min(claimAhead*s.cfg.Slots-s.pending, unwrittenPerSlot*s.cfg.Slots-len(s.running)))
}

// ownerCap is the most slots one role's tasks hold at once: all slots but one, so that another
// role's task finds a slot while one role's long tasks run.
func (s *Service) ownerCap() int { return max(1, s.cfg.Slots-1) }

// claimCap is the most tasks of one role the claim may hold claimed and not ended: all the claim
// ahead but one place, beside ownerCap in the slots.
func (s *Service) claimCap() int { return claimAhead*s.cfg.Slots - 1 }

// runEntry is a task the service claimed and has not written the end of.
type runEntry struct {
	attempt int
	ended   bool // its run is over, its end not written yet
}

// ended returns the tasks whose run is over and whose end is not written yet: the claim does not
// count them as their role's.
func (s *Service) ended() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := []int64{}
	for id, r := range s.running {
		if r.ended {
			ids = append(ids, id)
		}
	}
	return ids
}

// enter waits until a slot is free, the role owner holds fewer than ownerCap, and the run's ticket
// (from start, in claim order) is the first of the role's runs waiting, and takes one; false when
// the agent stopped meanwhile.
func (s *Service) enter(owner uint32, ticket uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.slotFreed.Broadcast() // the role's next run may be the first now
	for s.holding[owner] >= s.ownerCap() || s.held >= s.cfg.Slots || s.queued[owner][0] != ticket {
		if s.runCtx.Err() != nil {
			s.dequeue(owner, ticket)
			return false
		}
		s.slotFreed.Wait()
	}
	s.dequeue(owner, ticket)
	s.holding[owner]++
	s.held++
	return true
}

// queue gives a claimed run of owner its place among the role's runs waiting for a slot.
func (s *Service) queue(owner uint32) uint64 {
	s.tickets++
	s.queued[owner] = append(s.queued[owner], s.tickets)
	return s.tickets
}

// withdraw takes the ticket of a run that does not run out of owner's queue.
func (s *Service) withdraw(owner uint32, ticket uint64) {
	s.mu.Lock()
	s.dequeue(owner, ticket)
	s.mu.Unlock()
	s.slotFreed.Broadcast()
}

// dequeue takes a ticket out of owner's queue.
func (s *Service) dequeue(owner uint32, ticket uint64) {
	q := slices.DeleteFunc(s.queued[owner], func(t uint64) bool { return t == ticket })
	if len(q) == 0 {
		delete(s.queued, owner)
		return
	}
	s.queued[owner] = q
}

// leave gives back a slot of owner taken by enter.
func (s *Service) leave(owner uint32) {
	s.mu.Lock()
	s.held--
	if s.holding[owner]--; s.holding[owner] <= 0 {
		delete(s.holding, owner)
	}
	s.mu.Unlock()
	s.slotFreed.Broadcast()
}

// ran marks a claimed task's run as over (its end queued, or left to the next agent): it no longer
// counts as pending, and the loop may claim again once a quarter of the claim ahead is free.
func (s *Service) ran(id int64) {
	s.mu.Lock()
	s.pending--
	if r, ok := s.running[id]; ok {
		r.ended = true
		s.running[id] = r
	}
	wake := s.pending <= (claimAhead*s.cfg.Slots)*3/4
	s.mu.Unlock()
	if wake {
		select {
		case s.freed <- struct{}{}:
		default:
		}
	}
}

// setLive records the epoch of the term serving now (0: none); the runs waiting for a slot look
// at it when their turn comes.
func (s *Service) setLive(epoch int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live = epoch
	s.slotFreed.Broadcast()
}

// current tells whether the term of epoch still serves.
func (s *Service) current(epoch int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live == epoch
}
