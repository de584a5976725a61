package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/schedule"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// adminEnv is a configuration file in a temporary directory and the flags that name the cluster.
type adminEnv struct {
	conf string
	host []string // -h HOST -p PORT
}

func newAdminEnv(t *testing.T) adminEnv {
	t.Helper()
	return adminEnv{
		conf: filepath.Join(t.TempDir(), "pgjobs.conf"),
		host: []string{"-h", cluster.Host(), "-p", strconv.Itoa(cluster.Port())},
	}
}

// run runs pgjobs COMMAND --config CONF ARGS.
func (e adminEnv) run(t *testing.T, command string, args ...string) result {
	t.Helper()
	return runBinary(t, nil, append([]string{command, "--config", e.conf}, args...)...)
}

// on runs a command that names the database with -h, -p and -d.
func (e adminEnv) on(t *testing.T, command, db string, args ...string) result {
	t.Helper()
	return e.run(t, command, append(append(append([]string{}, e.host...), "-d", db), args...)...)
}

func (e adminEnv) file(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(e.conf)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(data)
}

func hasSchema(t *testing.T, db string) bool {
	t.Helper()
	_, err := sqlschema.Installed(context.Background(), cluster.Connect(t, db))
	return err == nil
}

func TestAdminCommands(t *testing.T) {
	t.Parallel()
	env := newAdminEnv(t)
	db := cluster.NewDatabase(t)
	target := fmt.Sprintf("%s:%d/%s", cluster.Host(), cluster.Port(), db)
	row := fmt.Sprintf("1=%s|%d|%s|0|postgres|none|none", cluster.Host(), cluster.Port(), db)

	got := env.on(t, "enabledb", db, "-u", "postgres")
	if want := (result{fmt.Sprintf("enabled pgjobs in %s as agent 1\n%s\n", target, row), "", 0}); got != want {
		t.Fatalf("enabledb:\n got %#v\nwant %#v", got, want)
	}
	if !hasSchema(t, db) {
		t.Fatal("enabledb did not install the schema")
	}
	wantFile := "system=" + systemVersion() + "\n" + row + "\n"
	if env.file(t) != wantFile {
		t.Fatalf("configuration after enabledb:\n%s\nwant:\n%s", env.file(t), wantFile)
	}

	again := env.on(t, "enabledb", db)
	if again.code != 1 || !strings.Contains(again.stderr, "is already enabled (row 1 of "+env.conf+")") {
		t.Fatalf("second enabledb: %#v", again)
	}
	if env.file(t) != wantFile {
		t.Fatal("a failed enabledb changed the configuration")
	}

	checks := []struct {
		name    string
		command string
		args    []string
		want    result
	}{
		{"viewsystem", "viewsystem", nil, result{"system=" + systemVersion() + "\n", "", 0}},
		{"viewmaster", "viewmaster", nil, result{"master=0\n", "", 0}},
		{"viewdb", "viewdb", append(append([]string{}, env.host...), "-d", db), result{row + "\n", "", 0}},
		{"updatemaster", "updatemaster", []string{"-l", "3"}, result{"master=3\n", "", 0}},
		{"updatemaster out of range", "updatemaster", []string{"-l", "9"}, result{"", "pgjobs: -l \"9\": loglevel \"9\" is out of range 0..5\nusage: pgjobs updatemaster -l LOGLEVEL\n", 2}},
		{"updatedb level", "updatedb", append(append([]string{}, env.host...), "-d", db, "-l", "2", "-n", "mail"),
			result{strings.Replace(strings.Replace(row, "|0|", "|2|", 1), "|none|none", "|mail|none", 1) + "\n", "", 0}},
		{"viewdb unknown", "viewdb", []string{"-h", "localhost", "-d", "nope"}, result{"", "pgjobs: database localhost:5432/nope is not in " + env.conf + ": enable it with pgjobs enabledb -d nope\n", 1}},
		{"viewdb without -d", "viewdb", nil, result{"", "pgjobs: viewdb needs -d DATABASE (or PGDATABASE)\nusage: pgjobs viewdb [-h HOST] [-p PORT] -d DATABASE\n", 2}},
		{"updatesystem", "updatesystem", []string{"-v", systemVersion()}, result{fmt.Sprintf("%s: schema version %d -> %[2]d\nsystem=%s\n", target, sqlschema.Latest(), systemVersion()), "", 0}},
		{"updatesystem unknown version", "updatesystem", []string{"-v", "1.01"}, result{"", fmt.Sprintf("pgjobs: -v \"1.01\": this pgjobs brings the schema to system version %s and records only that: pgjobs updatesystem -v %[1]s\nusage: pgjobs updatesystem -v VERSION\n", systemVersion()), 2}},
		{"updatesystem without -v", "updatesystem", nil, result{"", fmt.Sprintf("pgjobs: updatesystem needs -v VERSION: the version of this pgjobs, %s\nusage: pgjobs updatesystem -v VERSION\n", systemVersion()), 2}},
	}
	for _, tt := range checks {
		if got := env.run(t, tt.command, tt.args...); got != tt.want {
			t.Errorf("%s:\n got %#v\nwant %#v", tt.name, got, tt.want)
		}
	}

	// updatedb to a database that is not enabled changes nothing.
	other := cluster.NewDatabase(t)
	before := env.file(t)
	moved := env.on(t, "updatedb", db, "-dd", other)
	if moved.code != 1 || !strings.Contains(moved.stderr, "has no pgjobs schema: install it first with pgjobs enabledb") || env.file(t) != before {
		t.Fatalf("updatedb to an unenabled database: %#v", moved)
	}

	// jobs lists what the SQL API created.
	conn := cluster.Connect(t, db)
	if _, err := conn.Exec(context.Background(), `CREATE FUNCTION off_line() RETURNS void LANGUAGE sql AS 'SELECT 1';
		SELECT pgjobs.pgj_create_schedule('Daily0630', 'D 6:30'), pgjobs.pgj_create_job('OffLine', 'off_line()', null, 'Daily0630'),
		       pgjobs.pgj_create_startup_job('Warm', 'off_line()')`); err != nil {
		t.Fatal(err)
	}
	// No agent has planned OffLine: its next run is computed from its schedule, in the database's
	// time zone, and lies ahead.
	var next time.Time
	var zone string
	asked := time.Now()
	if err := conn.QueryRow(context.Background(), "SELECT next_run, current_setting('TimeZone') FROM pgjobs.pgj_jobs WHERE name = 'OffLine'").Scan(&next, &zone); err != nil {
		t.Fatal(err)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	daily := schedule.MustParse("D 6:30").In(loc)
	if want, _ := daily.Next(asked); !next.Equal(want) {
		t.Fatalf("OffLine's next run %s, want %s", next, want)
	}
	jobs := env.on(t, "jobs", db)
	nextText := next.Local().Format(fireTimeLayout)
	owner := fmt.Sprintf("%-*s", max(len("OWNER"), len(cluster.User()))+2, cluster.User())
	wantJobs := "NAME     " + fmt.Sprintf("%-*s", len(owner), "OWNER") + "FUNCTION           STARTS          RECURS ON           NEXT RUN" + strings.Repeat(" ", len(nextText)-6) + "LAST RUN  LAST STATUS\n" +
		"OffLine  " + owner + "public.off_line()  -               Daily0630 (D 6:30)  " + nextText + "  -         -\n" +
		"Warm     " + owner + "public.off_line()  at agent start  -                   -" + strings.Repeat(" ", len(nextText)+1) + "-         -\n"
	if jobs.code != 0 || jobs.stdout != wantJobs {
		t.Fatalf("jobs:\n%s%s\nwant:\n%s", jobs.stdout, jobs.stderr, wantJobs)
	}

	off := env.on(t, "disabledb", db)
	if want := (result{fmt.Sprintf("disabled pgjobs in %s (agent 1)\n", target), "", 0}); off != want {
		t.Fatalf("disabledb:\n got %#v\nwant %#v", off, want)
	}
	if hasSchema(t, db) || strings.Contains(env.file(t), "|"+db+"|") {
		t.Fatalf("disabledb left the schema or the row:\n%s", env.file(t))
	}
	if again := env.on(t, "disabledb", db); again.code != 1 || !strings.Contains(again.stderr, "is not in") {
		t.Fatalf("second disabledb: %#v", again)
	}
}

func TestEnableDBChangesNothingOnFailure(t *testing.T) {
	t.Parallel()
	env := newAdminEnv(t)

	missing := env.on(t, "enabledb", "no_such_database")
	if missing.code != 1 || !strings.Contains(missing.stderr, `database "no_such_database" does not exist`) || env.file(t) != "" {
		t.Fatalf("enabledb of a missing database: %#v, file %q", missing, env.file(t))
	}

	// A database whose schema exists but that has no configuration row.
	db := cluster.NewDatabase(t)
	if err := sqlschema.Install(context.Background(), cluster.Connect(t, db)); err != nil {
		t.Fatal(err)
	}
	got := env.on(t, "enabledb", db)
	if got.code != 1 || !strings.Contains(got.stderr, "already has a pgjobs schema") || env.file(t) != "" {
		t.Fatalf("enabledb over an existing schema: %#v, file %q", got, env.file(t))
	}

	usage := env.run(t, "enabledb")
	if usage != (result{"", "pgjobs: enabledb needs -d DATABASE (or PGDATABASE)\nusage: pgjobs enabledb [-h HOST] [-p PORT] -d DATABASE [-u USER] [-n NOTIFICATION] [-r RECIPIENT]\n", 2}) {
		t.Fatalf("enabledb without -d: %#v", usage)
	}
}

func TestEveryCommandHelpHasAnExample(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"enabledb", "disabledb", "viewsystem", "viewmaster", "viewdb", "updatesystem", "updatemaster", "updatedb", "jobs", "runs", "next", "status", "run"} {
		got := runBinary(t, nil, name, "--help")
		if got.code != 0 || !strings.Contains(got.stdout, "Example") || !strings.Contains(got.stdout, "pgjobs "+name) {
			t.Errorf("%s --help: %#v", name, got)
		}
	}
}
