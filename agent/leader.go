package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// lockWait is the lock_timeout of the agent's own sessions: no statement of theirs waits longer
// for a lock a user transaction holds.
const lockWait = 5 * time.Second

// wakeEvery is how often, at most, a standby looks at the lease when woken by notifications, and
// the leader answers pings: any role may send both.
const wakeEvery = time.Second

// lead returns once this session holds the leader lease of the database, with the lease's new
// epoch and the agent that held it before (nil when none ever did), or ctx ends.
//
// The lease is a row only the agents' roles may write: no other role can take or hold it. It is
// free when its leader session has ended or the leader gave it up (a soft stop, which wakes the
// standbys on pgjobs_leader). A standby looks every LeaderPing and asks the leader to answer
// (pgjobs_ping); a leader that leaves its pings unanswered for LeaderTimeout is hung (stopped,
// deadlocked, a paused VM): the standby takes the lease with a new epoch, so the old leader's
// claims fail, and ends its session. The leader sends nothing while no standby asks.
//
// Before each look at the lease, an agent ends the sessions of roles that may not run the agent
// and that hold or queue for strong locks on pgjobs' tables (see leader_intruders.sql). A take is
// a compare-and-set on the epoch and the leader's last answer, so a leader that answered between
// the look and the take keeps the lead.
func (a *dbAgent) lead(ctx context.Context, conn *pgx.Conn) (int64, *string, error) {
	if _, err := conn.Exec(ctx, "LISTEN pgjobs_leader"); err != nil {
		return 0, nil, fmt.Errorf("listen for the leader: %w", err)
	}
	standingBy := false
	// The oldest ping the current leader has not answered: when it was sent by the server's clock,
	// which the leader's answers are stamped with, and by this agent's monotonic clock, which
	// measures how long it has gone unanswered (a step of the server's clock deposes no one).
	var pingSent time.Time
	var pingLocal time.Time
	var leaderEpoch int64 // the epoch pingSent belongs to
	for {
		// First, so that no queued lock of another role keeps this agent from reading the lease.
		if err := a.endIntruders(ctx, conn); err != nil {
			return 0, nil, err
		}
		lookedAt := time.Now()
		lease, err := sqlschema.LeaderLook(ctx, conn, standingBy)
		if lockTimedOut(err) {
			// A role queued a strong lock on the lease after the sweep: sweep and look again at
			// once, rather than treating it as an outage and backing off.
			a.logf(agentlog.LevelDebug, agentlog.StatusWaiting, "the look at the leader lease waited past lock_timeout behind another session; looking again")
			continue
		}
		if err != nil {
			return 0, nil, err
		}
		if lease.Epoch != leaderEpoch || pingSent.IsZero() || (lease.Answered != nil && !lease.Answered.Before(pingSent)) {
			// This look's ping is the oldest unanswered.
			leaderEpoch, pingSent, pingLocal = lease.Epoch, lease.Now, lookedAt
		}
		hung := standingBy && lease.Alive && time.Since(pingLocal) >= a.opt.LeaderTimeout
		if !lease.Alive || hung {
			epoch, previous, taken, err := a.take(ctx, conn, lease, hung, standingBy)
			if err != nil || taken {
				return epoch, previous, err
			}
			continue // another agent was first: look again
		}
		if !standingBy {
			a.logf(agentlog.LevelEssential, agentlog.StatusWaiting, "another agent is active on this database (session %d); standing by to take over", *lease.PID)
			a.event(EventStandingBy)
			standingBy = true
			continue // ping it now
		}
		if err := a.standBy(ctx, conn); err != nil {
			return 0, nil, err
		}
	}
}

// lockTimedOut reports whether err is a statement that waited past lock_timeout, or that the
// server ended to break a deadlock: either way it waited for another session, and may be sent again.
func lockTimedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "40P01") // lock_not_available, deadlock_detected
}

// take takes the lease seen in lease, free or held by a hung leader, and reports whether it did,
// and which agent led before.
func (a *dbAgent) take(ctx context.Context, conn *pgx.Conn, lease sqlschema.Lease, hung, standingBy bool) (int64, *string, bool, error) {
	epoch, old, ok, err := sqlschema.LeaderTake(ctx, conn, a.opt.Name, lease, zoneName(a.opt.Location))
	if err != nil || !ok {
		return 0, nil, false, err
	}
	if standingBy {
		a.event(EventTakingOver) // the lease is taken: told before the old leader is deposed
	}
	if hung {
		a.logf(agentlog.LevelError, agentlog.StatusStarting, "warning: the active agent (session %d) left pings unanswered for %s: taking the lead from it", *lease.PID, a.opt.LeaderTimeout)
		if ended, err := sqlschema.LeaderDepose(ctx, conn, old); err != nil {
			a.logf(agentlog.LevelError, agentlog.StatusStarting, "warning: %v; its claims fail from now on all the same", err)
		} else if ended {
			a.logf(agentlog.LevelEssential, agentlog.StatusStarting, "ended the session %d of the replaced agent", *old.PID)
		}
	}
	if standingBy {
		a.logf(agentlog.LevelEssential, agentlog.StatusStarting, "taking over as the active agent")
	}
	return epoch, old.Agent, true, nil
}

// standBy waits LeaderPing, or less when woken on pgjobs_leader (not sooner than wakeEvery).
func (a *dbAgent) standBy(ctx context.Context, conn *pgx.Conn) error {
	looked := time.Now()
	deadline := looked.Add(a.opt.LeaderPing)
	for {
		wait, cancel := context.WithDeadline(ctx, deadline)
		_, err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil: // woken: the leader gave the lease up, or any role notified
			if soonest := looked.Add(wakeEvery); soonest.Before(deadline) {
				deadline = soonest
			}
			if !time.Now().Before(deadline) {
				return nil
			}
		case errors.Is(err, context.DeadlineExceeded) || wait.Err() != nil:
			return nil
		default:
			return fmt.Errorf("wait for the leader: %w", err)
		}
	}
}

// endIntruders ends the sessions of roles that may not run the agent holding or waiting for
// strong locks on pgjobs' tables.
func (a *dbAgent) endIntruders(ctx context.Context, conn *pgx.Conn) error {
	found, err := sqlschema.LeaderEndIntruders(ctx, conn)
	if err != nil {
		return fmt.Errorf("%w (the agent's role needs the privilege to end other roles' sessions: superuser or pg_signal_backend)", err)
	}
	for _, s := range found {
		if s.Ended {
			a.logf(agentlog.LevelError, agentlog.StatusWaiting, "warning: ended session %d of role %s: it held or waited for a lock on the agent's tables, which only the agent's roles may take", s.PID, s.Role)
			a.event(EventIntruder)
		} else {
			a.logf(agentlog.LevelError, agentlog.StatusWaiting, "warning: session %d of role %s holds or waits for a lock on the agent's tables and could not be ended", s.PID, s.Role)
		}
	}
	return nil
}

// zoneName returns the IANA name of loc, which pgj_jobs computes next runs in: time.Local's from
// TZ, else from the link /etc/localtime; "" when it cannot tell.
func zoneName(loc *time.Location) string {
	if name := loc.String(); name != "Local" {
		return name
	}
	path := "/etc/localtime"
	if tz, ok := os.LookupEnv("TZ"); ok {
		tz = strings.TrimPrefix(tz, ":")
		switch {
		case tz == "":
			return "UTC"
		case !strings.HasPrefix(tz, "/"):
			return tz
		}
		path = tz
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	if _, name, ok := strings.Cut(target, "zoneinfo/"); ok {
		return name
	}
	return ""
}
