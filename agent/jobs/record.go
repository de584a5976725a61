package jobs

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// recorder writes the ends of runs in batches, one transaction each: at a busy minute, the
// hundreds of runs that end together cost the database a few commits, not one each. A run waits
// until its end is written; the ends that arrive while a batch is written go in the next.
type recorder struct {
	mu      sync.Mutex
	queue   []recordRequest
	writing bool // a caller is writing batches; the others wait for it
}

type recordRequest struct {
	end  sqlschema.RunEnd
	done chan error
}

// maxRecordBatch is the most run ends written in one transaction.
const maxRecordBatch = 500

// finish records how a run ended: the whole run when it has no row yet (runID 0). An end that
// cannot be written (the database is unreachable) is kept and written when it is back.
func (s *Service) finish(records *pgxpool.Pool, run sqlschema.Run, runID int64, result sqlschema.RunResult) {
	req := recordRequest{end: sqlschema.RunEnd{Run: run, RunID: runID, Result: result}, done: make(chan error, 1)}
	r := &s.recorder
	r.mu.Lock()
	r.queue = append(r.queue, req)
	if !r.writing {
		r.writing = true
		for len(r.queue) > 0 {
			batch := r.queue[:min(len(r.queue), maxRecordBatch)]
			r.queue = r.queue[len(batch):]
			r.mu.Unlock()
			s.writeEnds(records, batch)
			r.mu.Lock()
		}
		r.writing = false
	}
	r.mu.Unlock()
	if err := <-req.done; err != nil {
		s.logf(agentlog.LevelError, agentlog.StatusFiring, "job %s: %v; recording it when the database is back", jobRef(run.JobName, run.Owner), err)
		s.pendingMu.Lock()
		s.pending = append(s.pending, req.end)
		s.pendingMu.Unlock()
	}
}

// writeEnds writes a batch of run ends and tells each caller how it went. When the batch fails,
// each end is written alone, so that one that cannot be recorded keeps no other from being.
func (s *Service) writeEnds(records *pgxpool.Pool, batch []recordRequest) {
	// Recorded even when the agent is stopping: a fresh context, bounded.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ends := make([]sqlschema.RunEnd, len(batch))
	for i, req := range batch {
		ends[i] = req.end
	}
	recorded, err := sqlschema.RunRecordEnds(ctx, records, ends)
	if err != nil && len(batch) > 1 {
		for _, req := range batch {
			s.writeEnds(records, []recordRequest{req})
		}
		return
	}
	for i, req := range batch {
		if err == nil && !recorded[i] {
			s.logf(agentlog.LevelError, agentlog.StatusFiring, "job %s ended %s, but its run had been marked abandoned meanwhile", jobRef(req.end.Run.JobName, req.end.Run.Owner), req.end.Result.Status)
		}
		req.done <- err
	}
}
