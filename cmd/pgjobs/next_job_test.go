package main

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNextJob: pgjobs next -d DATABASE JOB prints a job's fire times as the agent plans them, to
// the job's owner, an ordinary role, and to no other role.
func TestNextJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newAdminEnv(t)
	db := cluster.NewDatabase(t)
	if got := env.on(t, "enabledb", db, "-u", cluster.User()); got.code != 0 {
		t.Fatalf("enabledb: %#v", got)
	}
	super := cluster.Connect(t, db)
	alice := cluster.NewRole(t, "alice", db)
	bob := cluster.NewRole(t, "bob", db)
	if _, err := super.Exec(ctx, `CREATE FUNCTION public.off_line() RETURNS void LANGUAGE sql AS 'SELECT 1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ConnectAs(t, db, alice).Exec(ctx, `
		SELECT pgj_create_schedule('Daily', 'D 6:30');
		SELECT pgj_create_schedule('Evening', 'D 19:30');
		SELECT pgj_create_schedule('December2099', 'D 2099.12.01 00:00');
		SELECT pgj_create_schedule('March2099', 'D 2099.03.01 06:30');
		SELECT pgj_create_schedule('Past', 'D 2003.12.01 17:30');
		SELECT pgj_create_schedule('Every5', 'I 0:05');
		SELECT pgj_create_job('Report', 'off_line()', null, 'Daily');
		SELECT pgj_create_job('Launch', 'off_line()', 'December2099', 'Daily');
		SELECT pgj_add_job_schedule('Launch', 'Evening');
		SELECT pgj_create_job('Once', 'off_line()', 'March2099', null);
		SELECT pgj_create_job('Over', 'off_line()', 'Past', 'Daily');
		SELECT pgj_create_job('Tick', 'off_line()', null, 'Every5');
		SELECT pgj_create_job('Held', 'off_line()', null, 'Daily');
		SELECT pgj_pause_job('Held');
		SELECT pgj_create_job(U&'Held\3164"\FE0F', 'off_line()', null, 'Daily');
		SELECT pgj_pause_job(U&'Held\3164"\FE0F');
		SELECT pgj_create_job('Mixed', 'off_line()', 'March2099', 'Every5');
		SELECT pgj_create_startup_job('Hello', 'off_line()');
		SELECT pgj_add_job_schedule('Hello', 'Evening');`); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ConnectAs(t, db, bob).Exec(ctx, `SELECT pgj_create_schedule('Seven', 'D 7:00'), pgj_create_job('Secret', 'off_line()', null, 'Seven')`); err != nil {
		t.Fatal(err)
	}
	// Tick's next run as an agent planned it.
	if _, err := super.Exec(ctx, `INSERT INTO pgjobs.pgj_fire_ (firejobid, firenext)
		SELECT jobid, '2099-01-01 00:00:00+00' FROM pgjobs.pgj_job_ WHERE jobname = 'Tick'`); err != nil {
		t.Fatal(err)
	}
	as := func(role string, args ...string) []string {
		return append([]string{"next", "--config", env.conf, "-h", cluster.Host(), "-p", strconv.Itoa(cluster.Port()), "-d", db, "-u", role}, args...)
	}
	notFound := func(job string) result {
		return result{"", "pgjobs: next: job " + strconv.Quote(job) + " not found in database " + strconv.Quote(db) + "\n", 1}
	}
	for _, tt := range []struct {
		name string
		args []string
		want result
	}{
		{"daily in a fixed zone", as(alice, "--tz", "America/New_York", "--from", "2030-06-01T00:00:00Z", "--count", "3", "Report"),
			result{"2030-06-01T06:30:00-04:00\n2030-06-02T06:30:00-04:00\n2030-06-03T06:30:00-04:00\n", "", 0}},
		{"start schedule and two recurrences", as(alice, "--tz", "Europe/Berlin", "--count", "4", "Launch"),
			result{"2099-12-01T06:30:00+01:00\n2099-12-01T19:30:00+01:00\n2099-12-02T06:30:00+01:00\n2099-12-02T19:30:00+01:00\n", "", 0}},
		{"start schedule only fires once", as(alice, "--tz", "UTC", "--count", "3", "Once"),
			result{"2099-03-01T06:30:00+00:00\n", "", 0}},
		{"interval from the recorded next run", as(alice, "--tz", "UTC", "--count", "3", "Tick"),
			result{"2099-01-01T00:00:00+00:00\n2099-01-01T00:05:00+00:00\n2099-01-01T00:10:00+00:00\n", "", 0}},
		{"interval after --from keeps the agent's grid", as(alice, "--tz", "UTC", "--from", "2099-01-01T00:07:00Z", "--count", "2", "Tick"),
			result{"2099-01-01T00:10:00+00:00\n2099-01-01T00:15:00+00:00\n", "", 0}},
		{"start schedule passed before it was set: never fires", as(alice, "--tz", "UTC", "--count", "3", "Over"), result{"", "", 0}},
		{"paused", as(alice, "--tz", "UTC", "Held"),
			result{"", "pgjobs: job \"Held\" is paused: it fires nothing until pgj_resume_job resumes it\n", 0}},
		{"paused, its name printed as every command prints names", as(alice, "--tz", "UTC", "Held\u3164\"\ufe0f"),
			result{"", `pgjobs: job "Held\u3164""\ufe0f" is paused: it fires nothing until pgj_resume_job resumes it` + "\n", 0}},
		{"startup job with a recurrence", as(alice, "--tz", "UTC", "--from", "2030-06-01T00:00:00Z", "Hello"),
			result{"2030-06-01T19:30:00+00:00\n", "pgjobs: job \"Hello\" also runs each time an agent starts or takes over\n", 0}},
		{"unknown job", as(alice, "Nope"), notFound("Nope")},
		{"another role's job is not found", as(alice, "--tz", "UTC", "Secret"), notFound("Secret")},
		{"its owner's", as(bob, "--tz", "UTC", "--from", "2030-06-01T00:00:00Z", "Secret"), result{"2030-06-01T07:00:00+00:00\n", "", 0}},
		{"a schedule is a job's name with -d", as(alice, "D 6:30"), notFound("D 6:30")},
		{"-d without a job", as(alice),
			result{"", "pgjobs: next -d DATABASE takes one JOB argument, the job's name (got 0 arguments)\nusage: " + nextJobUsage + "\n", 2}},
		{"--start with -d", as(alice, "--start", "2030-06-01T00:00:00Z", "Tick"),
			result{"", "pgjobs: --start anchors a SCHEDULE's intervals; a job's count from its next run as the agent plans it\nusage: " + nextJobUsage + "\n", 2}},
		{"-u without -d", []string{"next", "-u", alice, "D 6:30"},
			result{"", "pgjobs: -u names the database of a job: pgjobs next -d DATABASE JOB\nusage: " + nextScheduleUsage + "\n", 2}},
		{"bad count with -d", as(alice, "--count", "0", "Tick"),
			result{"", "pgjobs: --count 0: must be 1 or more\nusage: " + nextJobUsage + "\n", 2}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := runInProcess(tt.args...); got != tt.want {
				t.Fatalf("pgjobs %q:\n got %#v\nwant %#v", tt.args, got, tt.want)
			}
		})
	}

	t.Run("an interval mixed with a calendar schedule", func(t *testing.T) {
		// Its interval counts from the agent's start, which pgj_jobs does not show: a note says so.
		got := runInProcess(as(alice, "--tz", "UTC", "--count", "2", "Mixed")...)
		if got.code != 0 || strings.Count(got.stdout, "\n") != 2 || !strings.Contains(got.stderr, `job "Mixed" mixes an interval schedule with others`) {
			t.Fatalf("%#v", got)
		}
	})
	t.Run("from now", func(t *testing.T) {
		before := time.Now()
		got := runInProcess(as(alice, "--tz", "America/New_York", "--count", "3", "Report")...)
		lines := strings.Split(strings.TrimSuffix(got.stdout, "\n"), "\n")
		if got.code != 0 || got.stderr != "" || len(lines) != 3 {
			t.Fatalf("%#v", got)
		}
		for i, line := range lines {
			fire, err := time.Parse(time.RFC3339, line)
			if err != nil || !strings.Contains(line, "T06:30:00-0") || !fire.After(before) || fire.After(before.Add(time.Duration(i+1)*25*time.Hour)) {
				t.Errorf("fire %d: %s is not the next 6:30 in New York after %v", i+1, line, before)
			}
		}
	})

	// The zone the agent recorded, which a superuser may read, comes before --tz.
	if _, err := super.Exec(ctx, `UPDATE pgjobs.pgj_leader_ SET zone = 'Asia/Tokyo'`); err != nil {
		t.Fatal(err)
	}
	want := result{"2030-06-01T06:30:00+09:00\n2030-06-02T06:30:00+09:00\n", "", 0}
	if got := runInProcess(as(cluster.User(), "--tz", "UTC", "--from", "2030-05-31T12:00:00Z", "--count", "2", "Report")...); got != want {
		t.Fatalf("as a superuser, in the agent's zone:\n got %#v\nwant %#v", got, want)
	}
}
