package sqlschema

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The leader lease: the row of pgjobs.pgj_leader_, which only the agents' roles may write. The
// agent holding it is the active one of the database; its epoch fences the fires it claims.

// ErrLostLead means another agent has taken the leader lease since this one took it.
var ErrLostLead = errors.New("another agent has taken the lead of the database")

// Server is what the leader session reads of its server when it connects.
type Server struct {
	PID        int  // the session's backend pid
	InRecovery bool // the server is a standby
	Available  int  // the sessions it accepts from ordinary roles: max_connections minus the reserved ones
}

// LeaderSession returns what a session reads of its server when it connects.
func LeaderSession(ctx context.Context, q DB) (Server, error) {
	var s Server
	if err := q.QueryRow(ctx, query("leader_session")).Scan(&s.PID, &s.InRecovery, &s.Available); err != nil {
		return Server{}, fmt.Errorf("read the session: %w", err)
	}
	return s, nil
}

// Lease is the leader lease as one look sees it.
type Lease struct {
	Epoch    int64
	PID      *int       // the leader's session; nil when no agent leads
	Alive    bool       // that session is connected to the database
	Answered *time.Time // when the leader last answered a ping
	Now      time.Time  // the server's clock at the look (before the ping it sent, if any)
}

// LeaderLook reads the leader lease and, when ping, asks the leader to answer (pgjobs_ping).
func LeaderLook(ctx context.Context, q DB, ping bool) (Lease, error) {
	var l Lease
	var pings int
	if err := q.QueryRow(ctx, query("leader_look"), ping).Scan(&l.Epoch, &l.PID, &l.Alive, &l.Answered, &l.Now, &pings); err != nil {
		return Lease{}, fmt.Errorf("look at the leader lease: %w", err)
	}
	return l, nil
}

// Deposed is the session of a leader replaced by LeaderTake, and its agent.
type Deposed struct {
	PID   *int
	Start *time.Time
	Agent *string // nil when no agent ever led the database
}

// LeaderTake takes the leader lease for this session as agent, if it is still as the caller's
// last look saw it (the same epoch, and no answer of the leader since), and returns the new epoch
// and the session of the leader it replaces; zone is the IANA zone the agent reads schedules in.
// ok is false when another agent took it first or the leader answered meanwhile.
func LeaderTake(ctx context.Context, q DB, agent string, seen Lease, zone string) (epoch int64, old Deposed, ok bool, err error) {
	err = q.QueryRow(ctx, query("leader_take"), agent, seen.Epoch, seen.Answered, zone).Scan(&epoch, &old.PID, &old.Start, &old.Agent)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, Deposed{}, false, nil
	}
	if err != nil {
		return 0, Deposed{}, false, fmt.Errorf("take the leader lease: %w", err)
	}
	return epoch, old, true, nil
}

// LeaderDepose ends the session of a replaced leader if it is still connected, and reports
// whether it did.
func LeaderDepose(ctx context.Context, q DB, old Deposed) (bool, error) {
	var ended bool
	if old.PID == nil {
		return false, nil
	}
	if err := q.QueryRow(ctx, query("leader_depose"), *old.PID, old.Start).Scan(&ended); err != nil {
		return false, fmt.Errorf("end the session %d of the replaced leader: %w", *old.PID, err)
	}
	return ended, nil
}

// LeaderAnswer answers the standbys' pings for the leader of epoch; ErrLostLead when another
// agent has taken the lease.
func LeaderAnswer(ctx context.Context, q DB, epoch int64) error {
	var e int64
	err := q.QueryRow(ctx, query("leader_answer"), epoch).Scan(&e)
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrLostLead
	}
	if err != nil {
		return fmt.Errorf("answer the standby agents: %w", err)
	}
	return nil
}

// LeaderRelease gives the lease of epoch up and wakes the standbys; it reports whether the lease
// was still this epoch's.
func LeaderRelease(ctx context.Context, q DB, epoch int64) (bool, error) {
	var released, woken int
	if err := q.QueryRow(ctx, query("leader_release"), epoch).Scan(&released, &woken); err != nil {
		return false, fmt.Errorf("release the leader lease: %w", err)
	}
	return released == 1, nil
}

// Intruder is a session of a role that may not run the agent, found holding or waiting for a
// strong lock on pgjobs' tables.
type Intruder struct {
	PID   int
	Role  string
	Ended bool // pg_terminate_backend signalled it to end
}

// LeaderEndIntruders ends the sessions that hold or wait for a strong lock on pgjobs' tables and
// whose role may not run the agent (it may not update pgjobs.pgj_leader_), and returns them.
func LeaderEndIntruders(ctx context.Context, q DB) ([]Intruder, error) {
	rows, err := q.Query(ctx, query("leader_intruders"))
	if err != nil {
		return nil, fmt.Errorf("end the sessions of other roles locking the agent's tables: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Intruder, error) {
		var i Intruder
		err := row.Scan(&i.PID, &i.Role, &i.Ended)
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("end the sessions of other roles locking the agent's tables: %w", err)
	}
	return found, nil
}

// ClaimedFire is a fire an agent may run: its job, and the name of the job's owner now (nil when
// the role was dropped).
type ClaimedFire struct {
	JobID int
	Owner *string
}

// FireClaim claims fires (job ids and fire times) for the agent of leader epoch epoch, and
// returns those it may run, none whose fire another agent has claimed. It fails with ErrLostLead
// when another agent has taken the lead since.
func FireClaim(ctx context.Context, q DB, ids []int, at []time.Time, epoch int64) ([]ClaimedFire, error) {
	rows, err := q.Query(ctx, query("fire_claim"), ids, at, epoch)
	if err != nil {
		return nil, fmt.Errorf("claim fires: %w", err)
	}
	defer rows.Close()
	var ours *bool
	var claimed []ClaimedFire
	for rows.Next() {
		var lead *bool
		var c ClaimedFire
		var id *int
		if err := rows.Scan(&lead, &id, &c.Owner); err != nil {
			return nil, fmt.Errorf("claim fires: %w", err)
		}
		if lead != nil {
			ours = lead
			continue
		}
		c.JobID = *id
		claimed = append(claimed, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim fires: %w", err)
	}
	if ours == nil || !*ours {
		return nil, ErrLostLead
	}
	return claimed, nil
}

// LeaderHolds reports whether the leader lease still has epoch.
func LeaderHolds(ctx context.Context, q DB, epoch int64) (bool, error) {
	var holds bool
	if err := q.QueryRow(ctx, query("leader_holds"), epoch).Scan(&holds); err != nil {
		return false, fmt.Errorf("look at the leader lease: %w", err)
	}
	return holds, nil
}

// PreparedLock is a prepared transaction holding a lock on a pgjobs table.
type PreparedLock struct {
	GID, Owner, Table string
}

// LeaderPreparedLocks returns the prepared transactions that hold locks on pgjobs' tables.
func LeaderPreparedLocks(ctx context.Context, q DB) ([]PreparedLock, error) {
	rows, err := q.Query(ctx, query("leader_prepared"))
	if err != nil {
		return nil, fmt.Errorf("look for prepared transactions locking the agent's tables: %w", err)
	}
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (PreparedLock, error) {
		var p PreparedLock
		err := row.Scan(&p.GID, &p.Owner, &p.Table)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("look for prepared transactions locking the agent's tables: %w", err)
	}
	return found, nil
}
