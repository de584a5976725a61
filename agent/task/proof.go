package task

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// termKey is the key of a leadership term from which the tokens of its runs' proofs are derived
// (schema version 6): a run's input commits, in its own transaction, the proof that its attempt
// ran, and a task with a proof is never run again.
type termKey struct {
	epoch int64
	key   []byte // nil until recorded
}

// proof returns the statement appended to the input of the attempt of task id run on the session
// of backend pid.
func (k termKey) proof(id int64, attempt int, pid uint32) string {
	if k.key == nil {
		return "" // not reached: the service records its key before it claims
	}
	return sqlschema.TaskProofSQL(k.epoch, id, attempt, pid, k.key)
}

// keyTerm records a new key for the term t, once per term, before the term claims anything.
func (s *Service) keyTerm(ctx context.Context, t Term) error {
	s.mu.Lock()
	done := s.key.epoch == t.Epoch && s.key.key != nil
	s.mu.Unlock()
	if done {
		return nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("make a key for the tasks' proofs: %w", err)
	}
	if err := sqlschema.TaskKey(ctx, t.Records, t.Epoch, key); err != nil {
		return err
	}
	s.mu.Lock()
	s.key = termKey{epoch: t.Epoch, key: key}
	s.mu.Unlock()
	return nil
}

// adopt ends the tasks an agent gone left claimed or running whose input committed its proof: they
// end DONE, their output lost, and do not run again.
func (s *Service) adopt(ctx context.Context, t Term) error {
	adopted, err := sqlschema.TaskAdopt(ctx, t.Records, t.Epoch, s.mine())
	if err != nil {
		return err
	}
	if len(adopted) > 0 {
		s.logf(agentlog.LevelEssential, agentlog.StatusStarting, "%d tasks left running by an agent gone had committed their work: they end DONE, their output lost, and do not run again", len(adopted))
	}
	for _, a := range adopted {
		s.mu.Lock()
		s.running[a.ID] = runEntry{attempt: a.Attempt, ended: true}
		s.mu.Unlock()
		now := s.cfg.Clock.Now()
		start := now
		if a.Start != nil {
			start = *a.Start
		}
		text := fmt.Sprintf("the agent that ran attempt %d ended before writing the task's output", a.Attempt)
		s.end(a.ClaimedTask, start, now, Result{Error: &text, Committed: true})
	}
	return nil
}
