package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestJobsAndRunsForScripts: pgjobs jobs --json, pgjobs runs with its filters, table and JSON,
// as an ordinary role that sees its own jobs and runs only, and updatedb --retention.
func TestJobsAndRunsForScripts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newAdminEnv(t)
	db := cluster.NewDatabase(t)
	if got := env.on(t, "enabledb", db, "-u", cluster.User()); got.code != 0 {
		t.Fatalf("enabledb: %#v", got)
	}
	super := cluster.Connect(t, db)
	alice := cluster.NewRole(t, "alice", db)
	if _, err := super.Exec(ctx, `CREATE FUNCTION public.off_line() RETURNS void LANGUAGE sql AS 'SELECT 1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ConnectAs(t, db, alice).Exec(ctx, `SELECT pgjobs.pgj_create_schedule('Daily', 'D 6:30'),
		pgjobs.pgj_create_job('Billing', 'off_line()', null, 'Daily'), pgjobs.pgj_create_job('Report', 'off_line()', null, 'Daily'),
		pgjobs.pgj_pause_job('Report'), pgjobs.pgj_set_job_timeout('Billing', '2 minutes')`); err != nil {
		t.Fatal(err)
	}
	if _, err := super.Exec(ctx, `SELECT pgjobs.pgj_create_startup_job('Secret', 'off_line()');
		INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runownerid, runscheduled, runstarted, runfinished, runstatus, runsqlstate, runmessage, runhint)
		SELECT j.jobid, j.jobname, j.jobowner, j.jobownerid, r.sched, r.started, r.started + r.took, r.status, r.state, r.msg, r.hint
		FROM pgjobs.pgj_job_ j, (VALUES
			('Billing', now() - interval '3 days', now() - interval '3 days', interval '2 seconds', 'ok', null, null, null),
			('Billing', now() - interval '2 hours', now() - interval '2 hours', interval '1.5 seconds', 'error', 'P0001', 'card
declined', 'retry'),
			('Report', now() - interval '1 hour', null, null, 'missed', null, 'the fire was missed', null),
			('Secret', null, now() - interval '1 hour', interval '1 second', 'ok', null, null, null)
		) AS r(job, sched, started, took, status, state, msg, hint)
		WHERE j.jobname = r.job`); err != nil {
		t.Fatal(err)
	}
	as := append(append([]string{}, env.host...), "-d", db, "-u", alice)

	jobs := runBinary(t, []string{"PGJOBS_CONF=" + env.conf}, append([]string{"jobs", "--json"}, as...)...)
	var listed []map[string]any
	if err := json.Unmarshal([]byte(jobs.stdout), &listed); err != nil || jobs.code != 0 {
		t.Fatalf("jobs --json: %v %#v", err, jobs)
	}
	if len(listed) != 2 || listed[0]["name"] != "Billing" || listed[0]["timeout_seconds"] != 120.0 || listed[1]["paused"] != true || listed[1]["next_run"] != nil {
		t.Fatalf("jobs --json as %s: %s", alice, jobs.stdout)
	}
	table := runBinary(t, []string{"PGJOBS_CONF=" + env.conf}, append([]string{"jobs"}, as...)...)
	if !strings.Contains(table.stdout, "paused") {
		t.Fatalf("jobs does not show the paused job:\n%s", table.stdout)
	}

	for _, tt := range []struct {
		name  string
		args  []string
		lines []string // the first column and the status of each row, in order (the second is the owner)
	}{
		{"all", nil, []string{"Report missed", "Billing error", "Billing ok"}},
		{"failed", []string{"--failed"}, []string{"Report missed", "Billing error"}},
		{"since", []string{"--since", "1 day"}, []string{"Report missed", "Billing error"}},
		{"one job", []string{"--job", "Billing", "--limit", "1"}, []string{"Billing error"}},
	} {
		got := runBinary(t, []string{"PGJOBS_CONF=" + env.conf}, append(append([]string{"runs"}, as...), tt.args...)...)
		rows := strings.Split(strings.TrimSuffix(got.stdout, "\n"), "\n")
		if got.code != 0 || !strings.HasPrefix(rows[0], "JOB") || len(rows)-1 != len(tt.lines) {
			t.Errorf("runs %s: %#v", tt.name, got)
			continue
		}
		for i, want := range tt.lines {
			if fields := strings.Fields(rows[i+1]); fields[0] != strings.Fields(want)[0] || fields[1] != alice || !strings.Contains(rows[i+1], " "+strings.Fields(want)[1]+" ") {
				t.Errorf("runs %s: row %d = %q, want %s", tt.name, i+1, rows[i+1], want)
			}
		}
	}
	failed := runBinary(t, []string{"PGJOBS_CONF=" + env.conf}, append([]string{"runs", "--failed", "--job", "Billing"}, as...)...)
	if !strings.Contains(failed.stdout, "P0001: card declined") || !strings.Contains(failed.stdout, "1.5s") {
		t.Fatalf("runs shows no SQLSTATE, one-line message or duration:\n%s", failed.stdout)
	}
	asJSON := runBinary(t, []string{"PGJOBS_CONF=" + env.conf}, append([]string{"runs", "--json", "--failed", "--job", "Billing"}, as...)...)
	var runs []map[string]any
	if err := json.Unmarshal([]byte(asJSON.stdout), &runs); err != nil || len(runs) != 1 || runs[0]["hint"] != "retry" || runs[0]["duration_seconds"] != 1.5 || runs[0]["message"] != "card\ndeclined" {
		t.Fatalf("runs --json: %v %s", err, asJSON.stdout)
	}
	bad := runBinary(t, []string{"PGJOBS_CONF=" + env.conf}, append([]string{"runs", "--since", "yesterday"}, as...)...)
	if bad.code != 2 || !strings.Contains(bad.stderr, `--since "yesterday" is not a PostgreSQL interval`) {
		t.Fatalf("runs --since yesterday: %#v", bad)
	}

	retention := env.on(t, "updatedb", db, "--retention", "90 days")
	if retention.code != 0 || !strings.HasSuffix(retention.stdout, "run_retention=90 days\n") {
		t.Fatalf("updatedb --retention: %#v", retention)
	}
	if got, err := sqlschema.Installed(ctx, super); err != nil || got != sqlschema.Latest() {
		t.Fatal(got, err)
	}
	short := env.on(t, "updatedb", db, "--retention", "1 minute")
	if short.code != 1 || !strings.Contains(short.stderr, "run_retention 00:01:00 is out of range 1 hour .. 100 years") {
		t.Fatalf("updatedb --retention '1 minute': %#v", short)
	}
}
