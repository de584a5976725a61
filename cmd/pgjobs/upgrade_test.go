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
