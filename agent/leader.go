package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// standbyRecheck is how long a standby waits for the leader lock before it looks again at who
// holds it: the lock_timeout of the agent's own sessions.
const standbyRecheck = 5 * time.Second

// lead returns once this session holds the agent leader lock of the database, or ctx ends.
//
// The lock is an advisory lock, which any role can take: a session of a role that may not run the
// agent (it may not update pgjobs.pgj_leader_) holding or waiting for it, or for a strong lock on
// pgjobs' tables (see leader_intruders.sql), is ended, and logged as a warning naming the role,
// before each try. A standby waits for the lock at most standbyRecheck at
// a time, then looks again: a role that queued for the lock before it cannot lead when the leader
// dies. The leader itself sends nothing while it leads.
func (a *dbAgent) lead(ctx context.Context, conn *pgx.Conn) error {
	standingBy := false
	for {
		if err := a.endIntruders(ctx, conn); err != nil {
			return err
		}
		got, err := sqlschema.LeaderTry(ctx, conn)
		if err != nil {
			return err
		}
		if !got {
			if !standingBy {
				a.logf(agentlog.LevelEssential, statusWaiting, "another agent is active on this database; standing by to take over")
				standingBy = true
			}
			if got, err = sqlschema.LeaderWait(ctx, conn); err != nil {
				return err
			}
		}
		if got {
			if standingBy {
				a.logf(agentlog.LevelEssential, statusStarting, "taking over as the active agent")
			}
			return nil
		}
	}
}

// endIntruders ends the sessions of roles that may not run the agent holding or waiting for the
// leader lock.
func (a *dbAgent) endIntruders(ctx context.Context, conn *pgx.Conn) error {
	found, err := sqlschema.LeaderEndIntruders(ctx, conn)
	if err != nil {
		return fmt.Errorf("%w (the agent's role needs the privilege to end other roles' sessions: superuser or pg_signal_backend)", err)
	}
	for _, s := range found {
		if s.Ended {
			a.logf(agentlog.LevelError, statusWaiting, "warning: ended session %d of role %s: it held or waited for the agent leader lock or a lock on the agent's tables, which only the agent's roles may take", s.PID, s.Role)
		} else {
			a.logf(agentlog.LevelError, statusWaiting, "warning: session %d of role %s holds or waits for the agent leader lock or a lock on the agent's tables and could not be ended within 5 s", s.PID, s.Role)
		}
	}
	return nil
}
