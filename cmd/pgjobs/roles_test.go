package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestOrdinaryRole: an ordinary LOGIN role reads its own jobs with pgjobs jobs, and is told in one
// line, before anything changes, that enabledb, disabledb and updatesystem need a superuser.
func TestOrdinaryRole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newAdminEnv(t)
	db := cluster.NewDatabase(t)
	if err := sqlschema.Install(ctx, cluster.Connect(t, db)); err != nil {
		t.Fatal(err)
	}
	alice := cluster.NewRole(t, "alice", db)
	bob := cluster.NewRole(t, "bob", db)
	if _, err := cluster.Connect(t, db).Exec(ctx, `CREATE FUNCTION public.off_line() RETURNS void LANGUAGE sql AS 'SELECT 1'`); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{alice, bob} {
		if _, err := cluster.ConnectAs(t, db, role).Exec(ctx, fmt.Sprintf("SELECT pgjobs.pgj_create_startup_job('%s job', 'off_line()')", role)); err != nil {
			t.Fatal(err)
		}
	}
	jobs := env.on(t, "jobs", db, "-u", alice)
	if jobs.code != 0 || !strings.Contains(jobs.stdout, alice+" job") || strings.Contains(jobs.stdout, bob) || jobs.stderr != "" {
		t.Fatalf("jobs as %s: %#v", alice, jobs)
	}

	other := cluster.NewDatabase(t)
	enable := env.on(t, "enabledb", other, "-u", alice)
	target := fmt.Sprintf("%s:%d/%s", cluster.Host(), cluster.Port(), other)
	want := fmt.Sprintf("pgjobs: enabledb: %s: enabledb needs a superuser, and %s connects as %s, which is not one: name a superuser with -u (for the agent's row too), or ask one to run it\n", env.conf, target, alice)
	if enable.code != 1 || enable.stderr != want {
		t.Fatalf("enabledb as %s:\n got %#v\nwant stderr %q", alice, enable, want)
	}
	if hasSchema(t, other) || env.file(t) != "" {
		t.Fatalf("a refused enabledb changed something: schema %v, file %q", hasSchema(t, other), env.file(t))
	}

	// A row whose user is alice: disabledb and updatesystem refuse, changing nothing.
	row := fmt.Sprintf("system=%s\nmaster=0\n1=%s|%d|%s|0|%s|none|none\n", systemVersion(), cluster.Host(), cluster.Port(), db, alice)
	writeFile(t, env.conf, row)
	if got := env.on(t, "disabledb", db); got.code != 1 || !strings.Contains(got.stderr, "disabledb needs a superuser") || !hasSchema(t, db) || env.file(t) != row {
		t.Fatalf("disabledb with the row's user %s: %#v", alice, got)
	}
	if got := env.run(t, "updatesystem", "-v", systemVersion()); got.code != 1 || !strings.Contains(got.stderr, "updatesystem needs a superuser") || env.file(t) != row {
		t.Fatalf("updatesystem with the row's user %s: %#v", alice, got)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDisableDBNamesWhatHoldsIt: an ordinary role's object that depends on its call's view by OID
// (a column default '<OID>'::regclass) makes disabledb fail, changing nothing, and the error's
// lines name that object, as PostgreSQL's detail does, in printable form (the object's name is
// the role's), with a hint pgjobs can follow instead of PostgreSQL's DROP ... CASCADE (the
// README-only attack on schema version 18: the detail was only in the server's log).
func TestDisableDBNamesWhatHoldsIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newAdminEnv(t)
	db := cluster.NewDatabase(t)
	if got := env.on(t, "enabledb", db); got.code != 0 {
		t.Fatalf("enabledb: %#v", got)
	}
	super := cluster.Connect(t, db)
	alice := cluster.NewRole(t, "alice", db)
	if _, err := super.Exec(ctx, fmt.Sprintf(`CREATE FUNCTION public.off_line() RETURNS void LANGUAGE sql AS 'SELECT 1';
		GRANT CREATE ON SCHEMA public TO %s`, alice)); err != nil {
		t.Fatal(err)
	}
	aliceConn := cluster.ConnectAs(t, db, alice)
	var view string
	if _, err := aliceConn.Exec(ctx, "SELECT pgjobs.pgj_create_job('A', 'off_line()', null, null)"); err != nil {
		t.Fatal(err)
	}
	if err := aliceConn.QueryRow(ctx, "SELECT view::regclass::oid::text FROM pgjobs.pgj_jobs WHERE name = 'A'").Scan(&view); err != nil {
		t.Fatal(err)
	}
	if _, err := aliceConn.Exec(ctx, fmt.Sprintf(`CREATE TABLE public."hold%s[2J" (x regclass DEFAULT '%s'::regclass)`, "\x1b", view)); err != nil {
		t.Fatal(err)
	}
	got := env.on(t, "disabledb", db)
	wantRefusedByDependents(t, "disabledb", got,
		"cannot drop",
		`DETAIL:  default value for column x of table "hold\x1b[2J" depends on pgjobs`,
		"HINT:  Nothing was changed. Drop or change the objects that the detail names",
	)
	if t.Failed() {
		t.FailNow()
	}
	if !hasSchema(t, db) || !strings.Contains(env.file(t), "|"+db+"|") {
		t.Fatalf("a failed disabledb changed something:\n%s", env.file(t))
	}
}

// wantRefusedByDependents checks that command failed with exit 1, its stderr holding each of
// wants, and neither an ESC (the names in it are roles') nor PostgreSQL's hint to DROP ... CASCADE.
func wantRefusedByDependents(t *testing.T, command string, got result, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(got.stderr, want) {
			t.Errorf("%s's error has no %q", command, want)
		}
	}
	if got.code != 1 || strings.Contains(got.stderr, "\x1b") || strings.Contains(got.stderr, "CASCADE") {
		t.Errorf("%s: exit %d, an escape %v, PostgreSQL's hint to CASCADE %v", command, got.code, strings.Contains(got.stderr, "\x1b"), strings.Contains(got.stderr, "CASCADE"))
	}
	if t.Failed() {
		t.Logf("%s's stderr:\n%s", command, got.stderr)
	}
}
