package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent"
)

// TestRunJobNow: pgjobs run asks the active agent to run a job now, as the job's owner (an
// ordinary LOGIN role) or a superuser, never as another role; --wait exits with the run's status.
func TestRunJobNow(t *testing.T) {
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
	if _, err := super.Exec(ctx, `CREATE TABLE public.hits (by text DEFAULT current_user);
		GRANT INSERT ON public.hits TO PUBLIC;
		CREATE FUNCTION public.hit() RETURNS void LANGUAGE sql AS 'INSERT INTO public.hits DEFAULT VALUES';
		CREATE FUNCTION public.boom() RETURNS void LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'card declined'; END $$`); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.ConnectAs(t, db, alice).Exec(ctx, `
		SELECT pgj_create_schedule('Later', 'D 2099.03.01 06:30');
		SELECT pgj_create_job('Good', 'hit()', 'Later', null);
		SELECT pgj_create_job('Bad', 'boom()', 'Later', null);
		SELECT pgj_create_job('Held', 'hit()', 'Later', null);
		SELECT pgj_create_job('Slow', 'pg_sleep(3)', 'Later', null);
		SELECT pgj_pause_job('Held')`); err != nil {
		t.Fatal(err)
	}
	statusAgent(t, cluster.DSN(db), "run-now agent", agent.EventActive, nil)

	got := env.on(t, "run", db, "-u", alice, "--wait", "Good")
	if got.code != 0 || !strings.Contains(got.stdout, `job "Good" asked to run now`) || !strings.Contains(got.stdout, `job "Good" ended ok in `) {
		t.Fatalf("run --wait Good as its owner: %#v", got)
	}
	var hits int
	var by string
	if err := super.QueryRow(ctx, "SELECT count(*), max(by) FROM public.hits").Scan(&hits, &by); err != nil || hits != 1 || by != alice {
		t.Fatalf("hits = %d by %q (%v), want one by %s", hits, by, err, alice)
	}
	// Recorded like any run, with its request and no scheduled time; pgjobs runs says so.
	var request *int64
	var status string
	if err := super.QueryRow(ctx, "SELECT request, status FROM pgjobs.pgj_runs WHERE job = 'Good' AND scheduled IS NULL").Scan(&request, &status); err != nil || request == nil || status != "ok" {
		t.Fatalf("the run of Good: request %v, status %q, %v", request, status, err)
	}
	if got := env.on(t, "runs", db, "-u", alice); got.code != 0 || !strings.Contains(got.stdout, "by hand") {
		t.Fatalf("runs: %#v", got)
	}

	// Another role: the job does not exist for it, and nothing runs.
	got = env.on(t, "run", db, "-u", bob, "Good")
	if got.code != 1 || !strings.Contains(got.stderr, `job "Good" does not exist`) {
		t.Fatalf("run Good as %s: %#v", bob, got)
	}
	// A failing job: --wait exits 1 with the error.
	got = env.on(t, "run", db, "-u", alice, "--wait", "Bad")
	if got.code != 1 || !strings.Contains(got.stderr, "job Bad ended error") || !strings.Contains(got.stderr, "P0001: card declined") {
		t.Fatalf("run --wait Bad: %#v", got)
	}
	// A paused job is refused.
	got = env.on(t, "run", db, "-u", alice, "--wait", "Held")
	if got.code != 1 || !strings.Contains(got.stderr, `pgj_run_job: argument 1: job "Held" is paused`) || !strings.Contains(got.stderr, "\nHINT:  ") {
		t.Fatalf("run --wait Held: %#v", got)
	}
	// A job whose run is still going is not run again: the request says why.
	got = env.on(t, "run", db, "-u", alice, "Slow")
	if got.code != 0 {
		t.Fatalf("run Slow: %#v", got)
	}
	waitUntil(t, "Slow's run to be recorded as running", func() bool {
		var n int
		err := super.QueryRow(ctx, "SELECT count(*) FROM pgjobs.pgj_runs WHERE job = 'Slow' AND status = 'running'").Scan(&n)
		return err == nil && n == 1
	})
	got = env.on(t, "run", db, "-u", alice, "--wait", "Slow")
	if got.code != 1 || !strings.Contains(got.stderr, "job Slow was not run: a run of it was still going") {
		t.Fatalf("run --wait Slow while it runs: %#v", got)
	}
	// A job made a moment ago runs once the agent has loaded it; its name, given as it is, is
	// printed escaped.
	if _, err := cluster.ConnectAs(t, db, alice).Exec(ctx, "SELECT pgj_create_job('Fresh\x1b[2J', 'hit()', 'Later', null)"); err != nil {
		t.Fatal(err)
	}
	got = env.on(t, "run", db, "-u", alice, "--wait", "--timeout", "20s", "Fresh\x1b[2J")
	if got.code != 0 || !strings.Contains(got.stdout, `job "Fresh\x1b[2J" asked to run now`) || !strings.Contains(got.stdout, `job "Fresh\x1b[2J" ended ok`) || strings.Contains(got.stdout, "\x1b") {
		t.Fatalf("run --wait of Fresh with an escape, just made: %#v", got)
	}
	// A superuser may run anyone's job.
	if got := env.on(t, "run", db, "-u", cluster.User(), "--wait", "Good"); got.code != 0 {
		t.Fatalf("run --wait Good as a superuser: %#v", got)
	}
	if err := super.QueryRow(ctx, "SELECT count(*) FROM public.hits").Scan(&hits); err != nil || hits != 3 {
		t.Fatalf("hits = %d (%v), want 3", hits, err)
	}
	// Usage.
	for _, args := range [][]string{{"-u", alice}, {"-u", alice, "--timeout", "5s", "Good"}, {"-u", alice, "Good", "Bad"}} {
		if got := env.on(t, "run", db, args...); got.code != 2 {
			t.Errorf("run %v: %#v, want exit 2", args, got)
		}
	}
}

// waitUntil polls cond every 50 ms, for at most 20 s, failing the test when it never holds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
