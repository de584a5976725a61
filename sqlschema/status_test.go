package sqlschema_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestStatusReadOlderSchemas: StatusRead reads a database without pgjobs as not enabled, and an
// older schema as far as it goes: version 4 has no tasks, version 2 records no leader session.
func TestStatusReadOlderSchemas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name    string
		version int // 0: no schema
		tracked bool
		tasks   bool
	}{
		{name: "not enabled"},
		{name: "version 2", version: 2},
		{name: "version 4", version: 4, tracked: true},
		{name: "latest", version: sqlschema.Latest(), tracked: true, tasks: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			conn := cluster.Connect(t, cluster.NewDatabase(t))
			if tt.version > 0 {
				if err := sqlschema.InstallVersion(ctx, conn, tt.version); err != nil {
					t.Fatal(err)
				}
			}
			s, err := sqlschema.StatusRead(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			if s.Enabled != (tt.version > 0) || s.Version != tt.version {
				t.Fatalf("enabled %v, version %d; want version %d", s.Enabled, s.Version, tt.version)
			}
			if tt.version == 0 {
				return
			}
			if !s.Superuser || !s.Leader.Readable || s.Leader.Tracked != tt.tracked || s.Leader.Active || (s.Tasks != nil) != tt.tasks {
				t.Fatalf("status %+v: want the lease readable, tracked %v, no active agent, tasks %v", s, tt.tracked, tt.tasks)
			}
			if s.Jobs != 0 || s.NextFire != nil || s.LastFailure != nil || s.Runs != (sqlschema.RunCounts{}) {
				t.Fatalf("an empty schema has jobs or runs: %+v", s)
			}
		})
	}
}

// TestStatusReadLeaderAndStandbys: the leader is the session holding the lease; a standby is
// another agent session whose last statement looked at the lease; a role that is no superuser may
// not read the lease, sees its own jobs only, and cannot see the agents' sessions of other roles.
func TestStatusReadLeaderAndStandbys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	super := cluster.Connect(t, db)
	if err := sqlschema.Install(ctx, super); err != nil {
		t.Fatal(err)
	}
	agentSession := func() *pgx.Conn {
		cfg, err := cluster.ConnConfig(db)
		if err != nil {
			t.Fatal(err)
		}
		cfg.RuntimeParams["application_name"] = "pgjobsagent 9"
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close(context.Background()) })
		return conn
	}
	alice := cluster.NewRole(t, "alice", db)
	if _, err := super.Exec(ctx, `CREATE FUNCTION public.f() RETURNS void LANGUAGE sql AS 'SELECT 1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ConnectAs(t, db, alice).Exec(ctx, `SELECT pgjobs.pgj_create_schedule('Far', 'D 2099.12.01 17:30'), pgjobs.pgj_create_job('Hers', 'f()', null, 'Far')`); err != nil {
		t.Fatal(err)
	}
	if _, err := super.Exec(ctx, `SELECT pgjobs.pgj_create_schedule('Far2', 'D 2099.12.01 17:30'), pgjobs.pgj_create_job('Mine', 'f()', null, 'Far2')`); err != nil {
		t.Fatal(err)
	}

	before, err := sqlschema.StatusRead(ctx, super)
	if err != nil {
		t.Fatal(err)
	}
	var next time.Time
	if err := super.QueryRow(ctx, "SELECT min(next_run) FROM pgjobs.pgj_jobs").Scan(&next); err != nil {
		t.Fatal(err)
	}
	if before.Leader.Active || before.Leader.Agent != nil || before.Jobs != 2 || before.NextJob == nil || *before.NextJob != "Hers" || before.NextOwner == nil || *before.NextOwner != alice || before.NextFire == nil || !before.NextFire.Equal(next) {
		t.Fatalf("before any agent: %+v; want no agent, 2 jobs, Hers of %s next at %s", before, alice, next)
	}

	leader, standby := agentSession(), agentSession()
	lease, err := sqlschema.LeaderLook(ctx, leader, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := sqlschema.LeaderTake(ctx, leader, "host1 pid 42", lease, "UTC"); err != nil || !ok {
		t.Fatalf("take the lease: %v %v", ok, err)
	}
	if _, err := sqlschema.LeaderLook(ctx, standby, false); err != nil {
		t.Fatal(err)
	}
	s, err := sqlschema.StatusRead(ctx, super)
	if err != nil {
		t.Fatal(err)
	}
	var leaderPID int
	if err := leader.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&leaderPID); err != nil {
		t.Fatal(err)
	}
	l := s.Leader
	if !l.Active || l.Agent == nil || *l.Agent != "host1 pid 42" || l.PID == nil || *l.PID != leaderPID || l.Since == nil || s.Now.Sub(*l.Since) < 0 || s.Now.Sub(*l.Since) > time.Minute {
		t.Fatalf("leader %+v, want host1 pid 42 on session %d since a moment ago", l, leaderPID)
	}
	if s.Standbys != (sqlschema.StandbyStatus{Count: 1}) {
		t.Fatalf("standbys %+v, want 1", s.Standbys)
	}

	hers, err := sqlschema.StatusRead(ctx, cluster.ConnectAs(t, db, alice))
	if err != nil {
		t.Fatal(err)
	}
	if hers.Superuser || hers.Role != alice || hers.Leader.Readable || hers.Leader.Active || hers.Standbys.Hidden != 2 || hers.Jobs != 1 {
		t.Fatalf("as %s: %+v; want the lease unreadable, 2 hidden agent sessions and her one job", alice, hers)
	}
}
