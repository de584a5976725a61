package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/config"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestUpgradeWarnings: updatesystem tells which jobs the upgrade stopped, even where the database
// sets client_min_messages to error, and tells nothing of an upgrade that failed and was rolled
// back.
func TestUpgradeWarnings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// setup makes a database of schema version 8 with two jobs whose calls version 14 stops
	setup := func(t *testing.T) config.Database {
		db := cluster.NewDatabase(t)
		super := cluster.Connect(t, db)
		if err := sqlschema.InstallVersion(ctx, super, 8); err != nil {
			t.Fatal(err)
		}
		if _, err := super.Exec(ctx, `CREATE FUNCTION public.any_value(v anyelement) RETURNS text LANGUAGE sql AS $$ SELECT v::text $$;
			SELECT pgjobs.pgj_create_job('First', 'public.any_value((''pg_class''::text)::regclass)', null, null),
			       pgjobs.pgj_create_job('Second', 'public.any_value((''pg_class''::text)::regclass)', null, null);
			ALTER DATABASE `+pgx.Identifier{db}.Sanitize()+` SET client_min_messages = error`); err != nil {
			t.Fatal(err)
		}
		return config.Database{Host: cluster.Host(), Port: strconv.Itoa(cluster.Port()), Name: db, User: cluster.User()}
	}
	stopped := "job %s (call public.any_value(('pg_class'::text)::regclass)) is stopped: it makes regclass values from another value at each run, looked up by name in its owner's search path. It does not run until its owner sets the call again with pgj_update_job"

	t.Run("Committed", func(t *testing.T) {
		t.Parallel()
		d := setup(t)
		from, to, warnings, err := upgrade(ctx, d)
		if err != nil || from != 8 || to != sqlschema.Latest() {
			t.Fatalf("upgrade = %d, %d, %v", from, to, err)
		}
		want := d.Target() + ": warning: " + fmt.Sprintf(stopped, "First") + "\n" + d.Target() + ": warning: " + fmt.Sprintf(stopped, "Second") + "\n"
		if warnings != want {
			t.Errorf("warnings:\n%s\nwant:\n%s", warnings, want)
		}
	})

	t.Run("RolledBack", func(t *testing.T) {
		t.Parallel()
		d := setup(t)
		// the scan stops First, with a warning, and fails at Second
		if _, err := cluster.Connect(t, d.Name).Exec(ctx, `CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE 'no change to %', OLD.jobname; END $$;
			CREATE TRIGGER refuse BEFORE UPDATE ON pgjobs.pgj_job_ FOR EACH ROW WHEN (OLD.jobname = 'Second') EXECUTE FUNCTION public.refuse()`); err != nil {
			t.Fatal(err)
		}
		if _, _, warnings, err := upgrade(ctx, d); err == nil || !strings.Contains(err.Error(), "no change to Second") {
			t.Fatalf("upgrade: %v, want the trigger's error", err)
		} else if warnings != "" {
			t.Errorf("warnings of a rolled back upgrade:\n%s", warnings)
		}
	})
}

// TestUpgradeRefusedNamesWhatHoldsIt: updatesystem over two databases, where a view made outside
// pgjobs depends on a view that the upgrade from version 1 drops in one of them: that database's
// error comes on its own lines with PostgreSQL's detail naming the view and a hint pgjobs can
// follow (not DROP ... CASCADE), the other database is upgraded, and the system version is not
// recorded.
func TestUpgradeRefusedNamesWhatHoldsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newAdminEnv(t)
	held, free := cluster.NewDatabase(t), cluster.NewDatabase(t)
	for _, db := range []string{held, free} {
		if got := env.on(t, "enabledb", db); got.code != 0 {
			t.Fatalf("enabledb: %#v", got)
		}
		conn := cluster.Connect(t, db)
		if err := sqlschema.Uninstall(ctx, conn); err != nil {
			t.Fatal(err)
		}
		if err := sqlschema.InstallVersion(ctx, conn, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cluster.Connect(t, held).Exec(ctx, "CREATE VIEW public.\"my\x1b[2J_jobs\" AS SELECT * FROM pgjobs.pgj_jobs"); err != nil {
		t.Fatal(err)
	}
	before := env.file(t)
	got := env.run(t, "updatesystem", "-v", systemVersion())
	heldTarget := fmt.Sprintf("%s:%d/%s", cluster.Host(), cluster.Port(), held)
	wantRefusedByDependents(t, "updatesystem", got,
		"pgjobs: updatesystem: "+heldTarget+": apply ",
		`DETAIL:  view public."my\x1b[2J_jobs" depends on view pgjobs.pgj_jobs`,
		"HINT:  Nothing was changed. Drop or change the objects that the detail names (they depend on pgjobs' own), then run pgjobs updatesystem again.",
		"pgjobs: updatesystem: system version not changed: the upgrade of 1 of 2 databases failed (above)\n",
	)
	if env.file(t) != before {
		t.Errorf("the configuration changed:\n%s", env.file(t))
	}
	for db, want := range map[string]int{held: 1, free: sqlschema.Latest()} {
		if v, err := sqlschema.Installed(ctx, cluster.Connect(t, db)); err != nil || v != want {
			t.Errorf("schema version of %s = %d, %v; want %d", db, v, err, want)
		}
	}
}
