package jobs

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// abandonRecheck is how often the agent looks again for ended sessions while runs of other
// agents are still recorded as running.
const abandonRecheck = 2 * time.Second

// Abandon marks abandoned the runs whose session has ended, and notes the jobs of runs of other
// agents still going (their sessions live: an agent that stopped softly, or one this agent took the
// lead from), whose fires are skipped meanwhile, to be looked at again.
func (s *Service) Abandon(ctx context.Context, records *pgxpool.Pool) error {
	names, err := sqlschema.RunAbandon(ctx, records)
	if err != nil {
		return err
	}
	for _, name := range names {
		s.cfg.Metrics.Fires(name, string(sqlschema.RunAbandoned), 1)
	}
	if len(names) > 0 {
		quoted := make([]string, len(names))
		for i, name := range names {
			quoted[i] = pgx.Identifier{name}.Sanitize()
		}
		s.logf(agentlog.LevelEssential, agentlog.StatusStarting, "marked %d runs abandoned (their session ended): jobs %s", len(names), strings.Join(quoted, ", "))
	}
	foreign, err := sqlschema.RunForeignRunning(ctx, records, s.cfg.Name)
	if err != nil {
		return err
	}
	s.foreignBusy = make(map[int]bool, len(foreign))
	for _, id := range foreign {
		s.foreignBusy[id] = true
	}
	return nil
}

// FlushPending records the run ends that could not be recorded before.
func (s *Service) FlushPending(ctx context.Context, records *pgxpool.Pool) {
	s.pendingMu.Lock()
	pending := s.pending
	s.pending = nil
	s.pendingMu.Unlock()
	for i, p := range pending {
		var err error
		if p.RunID == 0 {
			err = sqlschema.RunInsert(ctx, records, p.Run, p.Result)
		} else {
			_, err = sqlschema.RunFinish(ctx, records, p.RunID, p.Result)
		}
		if err != nil {
			s.pendingMu.Lock()
			s.pending = append(s.pending, pending[i:]...)
			s.pendingMu.Unlock()
			return
		}
	}
}

// PendingCount returns how many run ends wait to be recorded until the database is back.
func (s *Service) PendingCount() int {
	s.pendingMu.Lock()
	defer s.pendingMu.Unlock()
	return len(s.pending)
}
