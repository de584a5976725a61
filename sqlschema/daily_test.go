package sqlschema_test

import "testing"

// TestDailyUseAPI: pause, resume, time limits and settings, each as an ordinary LOGIN role the way
// an attacker would try them: on its own job, on another role's, through the definer functions
// directly, and on the settings that only a superuser may change.
func TestDailyUseAPI(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	bob := cluster.NewRole(t, "bob", db)
	aliceConn := cluster.ConnectAs(t, db, alice)
	bobConn := cluster.ConnectAs(t, db, bob)
	mustExec(t, aliceConn, "SELECT pgj_create_schedule('Daily', 'D 6:30'), pgj_create_job('Mine', 'off_line()', null, 'Daily')")

	mustExec(t, aliceConn, "SELECT pgj_pause_job('Mine'), pgj_pause_job('Mine'), pgj_set_job_timeout('Mine', '5 minutes')")
	if got := queryString(t, aliceConn, "SELECT paused || ' ' || timeout || ' ' || (next_run IS NULL) FROM pgj_jobs WHERE name = 'Mine'"); got != "true 00:05:00 true" {
		t.Fatalf("after pause and time limit: %s", got)
	}
	mustExec(t, aliceConn, "SELECT pgj_resume_job('Mine'), pgj_set_job_timeout('Mine', null)")
	if got := queryString(t, aliceConn, "SELECT paused || ' ' || (timeout IS NULL) FROM pgj_jobs WHERE name = 'Mine'"); got != "false true" {
		t.Fatalf("after resume: %s", got)
	}
	for _, tt := range []struct{ sql, code, text string }{
		{"SELECT pgj_pause_job('Mine')", "42704", `pgj_pause_job: argument 1: job "Mine" does not exist`},
		{"SELECT pgj_resume_job('Mine')", "42704", `pgj_resume_job: argument 1: job "Mine" does not exist`},
		{"SELECT pgj_set_job_timeout('Mine', '1 hour')", "42704", `pgj_set_job_timeout: argument 1: job "Mine" does not exist`},
		{"SELECT pgj_pause_job(null)", "22004", "pgj_pause_job: argument 1"},
		{"SELECT pgjobs.pgj_job_pause_('pgj_pause_job', 'Mine', true)", "42501", "call the public pgj_* function"},
		{"SELECT pgjobs.pgj_setting_set_('run_retention', '1 year')", "42501", "call the public pgj_* function"},
		{"SELECT pgj_set_setting('run_retention', '1 year')", "42501", "pgj_set_setting: only a superuser may change the settings"},
		{"UPDATE pgjobs.pgj_setting_ SET value = '1 year'", "42501", "permission denied"},
	} {
		wantError(t, bobConn, tt.sql, tt.code, tt.text)
	}
	for _, tt := range []struct{ sql, code, text string }{
		{"SELECT pgj_set_job_timeout('Mine', '0.5 seconds')", "22023", "pgj_set_job_timeout: argument 2: the time limit 00:00:00.5 is out of range 1 second .. 24 days"},
		{"SELECT pgj_set_job_timeout('Mine', '30 days')", "22023", "pgj_set_job_timeout: argument 2: the time limit 30 days is out of range 1 second .. 24 days"},
	} {
		wantError(t, aliceConn, tt.sql, tt.code, tt.text)
	}
	if got := queryString(t, bobConn, "SELECT value FROM pgj_settings WHERE name = 'run_retention'"); got != "30 days" {
		t.Fatalf("run_retention as bob reads it: %s", got)
	}
	mustExec(t, super, "SELECT pgj_set_setting('run_retention', '90 days'), pgj_set_setting('late_limit', '1 minute')")
	if got := queryString(t, bobConn, "SELECT value FROM pgj_settings WHERE name = 'late_limit'"); got != "00:01:00" {
		t.Fatalf("late_limit after the change: %s", got)
	}
	if got := queryString(t, aliceConn, "SELECT value FROM pgj_settings WHERE name = 'run_retention'"); got != "90 days" {
		t.Fatalf("run_retention after the change: %s", got)
	}
	for _, tt := range []struct{ sql, code, text string }{
		{"SELECT pgj_set_setting('run_retention', 'forever')", "22023", `pgj_set_setting: argument 2: run_retention "forever" is not an interval`},
		{"SELECT pgj_set_setting('run_retention', '1 minute')", "22023", "pgj_set_setting: argument 2: run_retention 00:01:00 is out of range 1 hour .. 100 years"},
		{"SELECT pgj_set_setting('run_retention', '200000 years')", "22023", "pgj_set_setting: argument 2: run_retention 200000 years is out of range 1 hour .. 100 years"},
		{"SELECT pgj_set_setting('colour', 'blue')", "42704", `pgj_set_setting: argument 1: no setting "colour"`},
		{"SELECT pgj_set_setting('late_limit', '2 hours')", "22023", "pgj_set_setting: argument 2: late_limit 02:00:00 is out of range 1 second .. 1 hour"},
	} {
		wantError(t, super, tt.sql, tt.code, tt.text)
	}
}

// TestNextRunIsNeverInThePast: with no agent leading, a plan that has passed is not shown; next_run
// is computed from the schedules instead, in the database's zone; a schedule that never fires again
// shows NULL, and so does a paused job.
func TestNextRunIsNeverInThePast(t *testing.T) {
	t.Parallel()
	db, super := apiDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	aliceConn := cluster.ConnectAs(t, db, alice)
	mustExec(t, aliceConn, `SELECT pgj_create_schedule('Daily', 'D 6:30'), pgj_create_schedule('Once', 'D 2003.06.01 0:00'),
		pgj_create_job('Stale', 'off_line()', null, 'Daily'), pgj_create_job('Gone', 'off_line()', null, 'Once'),
		pgj_create_job('Held', 'off_line()', null, 'Daily'), pgj_pause_job('Held')`)
	mustExec(t, super, `INSERT INTO pgjobs.pgj_fire_ (firejobid, firenext) SELECT jobid, now() - interval '1 day' FROM pgjobs.pgj_job_`)
	got := queryString(t, aliceConn, `SELECT string_agg(name || ' ' || CASE
			WHEN next_run IS NULL THEN 'none'
			WHEN next_run = pgjobs.pgj_next_fire_('D 6:30', now(), current_setting('TimeZone'), now()) AND next_run > now() THEN 'ahead'
			ELSE next_run::text END, ', ' ORDER BY name) FROM pgj_jobs`)
	if got != "Gone none, Held none, Stale ahead" {
		t.Fatalf("next runs: %s", got)
	}
}
