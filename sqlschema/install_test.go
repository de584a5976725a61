package sqlschema_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// enabledDatabase returns a new database with the pgjobs schema installed.
func enabledDatabase(t *testing.T) string {
	t.Helper()
	db := cluster.NewDatabase(t)
	if err := sqlschema.Install(context.Background(), cluster.Connect(t, db)); err != nil {
		t.Fatalf("install: %v", err)
	}
	return db
}

func schemaDump(t *testing.T, db string) string {
	t.Helper()
	out, err := exec.Command(cluster.Tool("pg_dump"), "--schema-only", "--dbname", cluster.DSN(db)).Output()
	if err != nil {
		t.Fatalf("pg_dump: %v", err)
	}
	// pg_dump marks its output with a random \restrict key: leave those lines out.
	var kept []string
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, `\restrict `) && !strings.HasPrefix(line, `\unrestrict `) {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n")
}

func databaseSettings(t *testing.T, conn *pgx.Conn) string {
	t.Helper()
	var settings string
	err := conn.QueryRow(context.Background(), `
		SELECT coalesce(array_to_string(setconfig, ';'), '') FROM pg_db_role_setting
		WHERE setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database()) AND setrole = 0
		UNION ALL SELECT '' LIMIT 1`).Scan(&settings)
	if err != nil {
		t.Fatal(err)
	}
	return settings
}

func TestInstallUninstallLeavesTheDatabaseAsBefore(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name        string
		before      string // a database-level search_path set before Install, or ""
		wantEnabled string
	}{
		{"no search_path setting", "", `search_path="$user", public, pgjobs`},
		{"own search_path setting", "app, public", "search_path=app, public, pgjobs"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := cluster.NewDatabase(t)
			conn := cluster.Connect(t, db)
			if tt.before != "" {
				if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET search_path TO "+tt.before); err != nil {
					t.Fatal(err)
				}
			}
			settingsBefore := databaseSettings(t, conn)
			dumpBefore := schemaDump(t, db)

			if err := sqlschema.Install(ctx, conn); err != nil {
				t.Fatal(err)
			}
			if v, err := sqlschema.Installed(ctx, conn); err != nil || v != sqlschema.Latest() {
				t.Fatalf("Installed = %d, %v; want %d", v, err, sqlschema.Latest())
			}
			if err := sqlschema.Check(ctx, conn); err != nil {
				t.Fatal(err)
			}
			if got := databaseSettings(t, conn); got != tt.wantEnabled {
				t.Fatalf("settings after install = %q, want %q", got, tt.wantEnabled)
			}
			if err := sqlschema.Install(ctx, conn); !errors.Is(err, sqlschema.ErrAlreadyEnabled) {
				t.Fatalf("second install: %v, want ErrAlreadyEnabled", err)
			}
			// a job of the superuser's: its call's view, in a schema of its own, goes too
			if _, err := conn.Exec(ctx, "SELECT pgjobs.pgj_create_job('J', 'pg_catalog.now()', null, null)"); err != nil {
				t.Fatal(err)
			}

			if err := sqlschema.Uninstall(ctx, conn); err != nil {
				t.Fatal(err)
			}
			if got := databaseSettings(t, conn); got != settingsBefore {
				t.Errorf("settings after uninstall = %q, want %q", got, settingsBefore)
			}
			if got := schemaDump(t, db); got != dumpBefore {
				t.Errorf("pg_dump --schema-only differs after uninstall:\n%s\n---- before:\n%s", got, dumpBefore)
			}
			if err := sqlschema.Uninstall(ctx, conn); !errors.Is(err, sqlschema.ErrNotEnabled) {
				t.Fatalf("second uninstall: %v, want ErrNotEnabled", err)
			}
		})
	}
}

func TestInstallOverAForeignSchemaChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	conn := cluster.Connect(t, db)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA pgjobs; CREATE TABLE pgjobs.mine (n int)"); err != nil {
		t.Fatal(err)
	}
	before := schemaDump(t, db)
	err := sqlschema.Install(ctx, conn)
	if err == nil || !strings.Contains(err.Error(), `schema "pgjobs" already exists`) {
		t.Fatalf("install over a foreign pgjobs schema: %v", err)
	}
	if after := schemaDump(t, db); after != before {
		t.Fatal("a failed install changed the database")
	}
}

func TestVersionCheckAndUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enabledDatabase(t)
	conn := cluster.Connect(t, db)
	if from, to, err := sqlschema.Upgrade(ctx, conn); err != nil || from != sqlschema.Latest() || to != from {
		t.Fatalf("Upgrade of a current schema = %d, %d, %v", from, to, err)
	}
	setVersion := func(v int) {
		if _, err := conn.Exec(ctx, "UPDATE pgjobs.pgj_version_ SET version = $1", v); err != nil {
			t.Fatal(err)
		}
	}
	setVersion(sqlschema.Latest() + 1)
	var verr *sqlschema.VersionError
	if err := sqlschema.Check(ctx, conn); !errors.As(err, &verr) || !strings.Contains(err.Error(), "install a newer pgjobs") {
		t.Fatalf("Check of a newer schema: %v", err)
	}
	if _, _, err := sqlschema.Upgrade(ctx, conn); !errors.As(err, &verr) {
		t.Fatalf("Upgrade of a newer schema: %v", err)
	}
	setVersion(sqlschema.Latest() - 1)
	if err := sqlschema.Check(ctx, conn); !errors.As(err, &verr) || !strings.Contains(err.Error(), "pgjobs updatesystem") {
		t.Fatalf("Check of an older schema: %v", err)
	}
	other := cluster.Connect(t, cluster.NewDatabase(t))
	if err := sqlschema.Check(ctx, other); !errors.Is(err, sqlschema.ErrNotEnabled) {
		t.Fatalf("Check without schema: %v", err)
	}
}

// TestUpgradeFromVersion2: the lease of version 3 starts free with the epoch version 2 had, so
// that the claims of an agent of version 2 still running fail once an agent of version 3 leads;
// jobs are kept.
func TestUpgradeFromVersion2(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	conn := cluster.Connect(t, db)
	if err := sqlschema.InstallVersion(ctx, conn, 2); err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, `CREATE FUNCTION off_line() RETURNS void LANGUAGE sql AS '';
		SELECT pgjobs.pgj_create_startup_job('Kept', 'off_line()');
		UPDATE pgjobs.pgj_leader_ SET epoch = 41, agent = 'old agent', since = now()`)
	if from, to, err := sqlschema.Upgrade(ctx, conn); err != nil || from != 2 || to != sqlschema.Latest() {
		t.Fatalf("Upgrade = %d, %d, %v", from, to, err)
	}
	lease, err := sqlschema.LeaderLook(ctx, conn, false)
	if err != nil || lease.Epoch != 41 || lease.PID != nil || lease.Alive {
		t.Fatalf("lease after the upgrade = %+v, %v; want epoch 41, free", lease, err)
	}
	epoch, _, ok, err := sqlschema.LeaderTake(ctx, conn, "new agent", lease, "UTC")
	if err != nil || !ok || epoch != 42 {
		t.Fatalf("LeaderTake = %d %v %v", epoch, ok, err)
	}
	if _, err := sqlschema.FireClaim(ctx, conn, []int{1}, []time.Time{time.Now()}, 41); !errors.Is(err, sqlschema.ErrLostLead) {
		t.Fatalf("claim of the old epoch: %v, want ErrLostLead", err)
	}
	if got := queryString(t, conn, "SELECT function FROM pgjobs.pgj_jobs WHERE name = 'Kept'"); got != "public.off_line()" {
		t.Fatalf("job after the upgrade: %q", got)
	}
}

// TestUpgradeRefusedByDependents: when a version drops an object that something made outside
// pgjobs depends on (version 2 drops the views of version 1), the upgrade fails changing nothing,
// the detail names the dependent and the hint says what to do instead of DROP ... CASCADE.
func TestUpgradeRefusedByDependents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	conn := cluster.Connect(t, cluster.NewDatabase(t))
	if err := sqlschema.InstallVersion(ctx, conn, 1); err != nil {
		t.Fatal(err)
	}
	mustExec(t, conn, "CREATE VIEW public.my_jobs AS SELECT * FROM pgjobs.pgj_jobs")
	_, _, err := sqlschema.Upgrade(ctx, conn)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "2BP01" {
		t.Fatalf("Upgrade with a dependent view: %v, want 2BP01", err)
	}
	if !strings.Contains(pgErr.Detail, "my_jobs") || strings.Contains(pgErr.Hint, "CASCADE") ||
		!strings.Contains(pgErr.Hint, "Nothing was changed") || !strings.Contains(pgErr.Hint, "pgjobs updatesystem again") {
		t.Fatalf("detail %q, hint %q", pgErr.Detail, pgErr.Hint)
	}
	if v, err := sqlschema.Installed(ctx, conn); err != nil || v != 1 {
		t.Fatalf("version after the refused upgrade = %d, %v; want 1", v, err)
	}
}

// TestUninstallRefusedByOutsideDependents: objects a role made outside pgjobs that depend on the
// pgjobs schema (a column of a pgjobs view's row type, a check calling a pgjobs function, a view
// over pgj_jobs) make the uninstall fail, naming each and changing nothing, instead of going with
// the schema's DROP ... CASCADE (the terminal-text attack of 2026-11-29: they went, silently), one
// a line, a line break in a name escaped;
// with them gone, the uninstall goes through.
func TestUninstallRefusedByOutsideDependents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enabledDatabase(t)
	super := cluster.Connect(t, db)
	alice := cluster.NewRole(t, "alice", db)
	mustExec(t, super, fmt.Sprintf(`CREATE SCHEMA al AUTHORIZATION %[1]s;
		CREATE FUNCTION al.f() RETURNS void LANGUAGE sql AS '';
		ALTER FUNCTION al.f() OWNER TO %[1]s`, alice))
	aliceConn := cluster.ConnectAs(t, db, alice)
	mustExec(t, aliceConn, `SELECT pgjobs.pgj_create_job('A', 'al.f()', null, null);
		CREATE TABLE al.hist (id int PRIMARY KEY, note text, snap pgjobs.pgj_jobs);
		INSERT INTO al.hist VALUES (1, 'precious', null);
		CREATE TABLE al.t2 (id int, sched text CHECK (sched IS NULL OR pgjobs.pgj_next_fire_(sched, now(), 'UTC', now()) IS NOT NULL));
		CREATE VIEW al.myjobs AS SELECT name FROM pgjobs.pgj_jobs;
		CREATE TABLE al.t3 ("x
table al.orders depends on pgjobs
column y" pgjobs.pgj_jobs)`)
	before := schemaDump(t, db)
	err := sqlschema.Uninstall(ctx, super)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "2BP01" || !strings.Contains(pgErr.Message, "4 objects made outside pgjobs depend on it") {
		t.Fatalf("Uninstall with dependents outside pgjobs: %v, want 2BP01 naming 4 objects", err)
	}
	// one a line: the line breaks of alice's column name are escaped, adding no line
	want := "column snap of table al.hist depends on pgjobs\n" + `column x\ntable al.orders depends on pgjobs\ncolumn y of table al.t3 depends on pgjobs` +
		"\nconstraint t2_sched_check on table al.t2 depends on pgjobs\nview al.myjobs depends on pgjobs"
	if pgErr.Detail != want || !strings.Contains(pgErr.Hint, "Nothing was changed") || strings.Contains(pgErr.Hint, "CASCADE") {
		t.Fatalf("detail:\n%s\nwant:\n%s\nhint %q", pgErr.Detail, want, pgErr.Hint)
	}
	if after := schemaDump(t, db); after != before {
		t.Fatal("a refused uninstall changed the database")
	}
	if pgErr.Routine != sqlschema.DetailByLine {
		t.Errorf("the refusal's detail is not marked as one item a line: %q", pgErr.Routine)
	}
	mustExec(t, aliceConn, "ALTER TABLE al.hist DROP COLUMN snap; DROP TABLE al.t2, al.t3; DROP VIEW al.myjobs")
	if err := sqlschema.Uninstall(ctx, super); err != nil {
		t.Fatalf("Uninstall once the dependents are gone: %v", err)
	}
	if got := queryString(t, super, "SELECT note FROM al.hist"); got != "precious" {
		t.Fatalf("alice's row: %q", got)
	}
}

// TestUninstallWaitsBoundedForLocks: a transaction holding a lock on pgjobs' tables (a role's,
// or a prepared one, which no session end releases) makes the uninstall fail after its
// lock_timeout, changing nothing and saying what to look at, instead of waiting for ever with its
// queued lock holding every statement of the agent behind it (the second attacker helper's N15).
func TestUninstallWaitsBoundedForLocks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enabledDatabase(t)
	holder := cluster.Connect(t, db)
	mustExec(t, holder, "BEGIN; LOCK TABLE pgjobs.pgj_fire_ IN ACCESS SHARE MODE")
	err := sqlschema.Uninstall(ctx, cluster.Connect(t, db))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "55P03" || !strings.Contains(pgErr.Hint, "pg_prepared_xacts") {
		t.Fatalf("Uninstall behind a held lock: %v, want 55P03 with a hint", err)
	}
	mustExec(t, holder, "ROLLBACK")
	if _, err := sqlschema.Installed(ctx, cluster.Connect(t, db)); err != nil {
		t.Fatalf("the schema after the refused uninstall: %v", err)
	}
}
