package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// statusAgent runs an in-process agent on database 1 of dsn and stops it at the test's end, or
// when stop is called; it returns once the agent reached event want (EventActive, or
// EventStandingBy behind another agent), told through the OnEvent hook.
func statusAgent(t *testing.T, dsn, name string, want agent.Event, configure func(*agent.Options)) (stop func()) {
	t.Helper()
	reached := make(chan struct{})
	var once sync.Once
	opt := agent.Options{
		Location: time.UTC,
		Name:     name,
		RetryMin: 50 * time.Millisecond,
		RetryMax: 200 * time.Millisecond,
		OnEvent: func(id int, e agent.Event) {
			if id == 1 && e == want {
				once.Do(func() { close(reached) })
			}
		},
	}
	if configure != nil {
		configure(&opt)
	}
	m := agent.NewMaster(opt, slog.New(slog.DiscardHandler))
	m.Apply([]agent.Database{{ID: 1, DSN: dsn}})
	var stopOnce sync.Once
	stop = func() { stopOnce.Do(func() { m.Stop(5 * time.Second) }) }
	t.Cleanup(stop)
	select {
	case <-reached:
	case <-time.After(30 * time.Second):
		t.Fatalf("agent %s was not %s within 30 s", name, want)
	}
	return stop
}

// freePort returns a TCP port of 127.0.0.1 that nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

// kv is a line of a block of pgjobs status, without its newline.
func kv(key, value string) string { return fmt.Sprintf("  %-16s %s", key+":", value) }

// wantLines fails the test unless text has every line, whole and with its leading blanks.
func wantLines(t *testing.T, what, text string, lines ...string) {
	t.Helper()
	for _, line := range lines {
		if !strings.Contains("\n"+text, "\n"+line+"\n") {
			t.Errorf("%s: no line %q in:\n%s", what, line, text)
		}
	}
}

// TestStatus: pgjobs status against a database served by a running agent with a standby, the
// same database once the agents stopped, an unreachable database and one without pgjobs, as
// text and as JSON, with its exit codes.
func TestStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newAdminEnv(t)
	db := cluster.NewDatabase(t)
	if got := env.on(t, "enabledb", db, "-u", cluster.User()); got.code != 0 {
		t.Fatalf("enabledb: %#v", got)
	}
	super := cluster.Connect(t, db)
	// Jobs that never fire while the test runs; runs as the agent writes them (one that ended 3 days
	// ago is out of the 24 hours); tasks in every state the agent leaves alone.
	if _, err := super.Exec(ctx, `CREATE FUNCTION public.off_line() RETURNS void LANGUAGE sql AS 'SELECT 1';
		SELECT pgjobs.pgj_create_schedule('Far', 'D 2099.12.01 17:30'), pgjobs.pgj_create_job('Billing', 'off_line()', null, 'Far'),
		       pgjobs.pgj_create_job('Report', 'off_line()', null, 'Far'), pgjobs.pgj_pause_job('Report');
		INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runownerid, runscheduled, runstarted, runfinished, runstatus, runsqlstate, runmessage, runagent)
		SELECT j.jobid, j.jobname, j.jobowner, j.jobownerid, now() - r.ago, CASE WHEN r.status <> 'missed' THEN now() - r.ago END,
		       now() - r.ago + interval '1 second', r.status, r.state, r.msg, 'test'
		FROM pgjobs.pgj_job_ j, (VALUES
			('Billing', interval '3 days', 'ok', null, null),
			('Billing', interval '2 hours', 'ok', null, null),
			('Billing', interval '30 minutes', 'error', 'P0001', 'card
declined'),
			('Report', interval '5 hours', 'cancelled', '57014', 'canceling statement due to statement timeout'),
			('Report', interval '2 hours', 'missed', null, 'the fire was missed')
		) AS r(job, ago, status, state, msg)
		WHERE j.jobname = r.job;
		BEGIN;
		SET LOCAL pgjobs.task_writer = 'agent';
		INSERT INTO pgjobs.task (state, plan, start, stop, input, output, delete)
		SELECT s::pgjobs.task_state, now() + CASE WHEN s = 'PLAN' THEN interval '1 day' ELSE interval '0' END,
		       CASE WHEN s IN ('DONE', 'FAIL') THEN now() END, CASE WHEN s IN ('DONE', 'FAIL') THEN now() END, 'SELECT 1', 'x', false
		FROM unnest(ARRAY['DONE', 'DONE', 'FAIL', 'STOP', 'PLAN']) AS s;
		COMMIT`); err != nil {
		t.Fatal(err)
	}
	unreachable := freePort(t)
	plain := cluster.NewDatabase(t)
	f, err := os.OpenFile(env.conf, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "2=127.0.0.1|%d|nowhere|0|postgres|none|none\n3=%s|%d|%s|0|%s|none|none\n", unreachable, cluster.Host(), cluster.Port(), plain, cluster.User())
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	target := fmt.Sprintf("%s:%d/%s", cluster.Host(), cluster.Port(), db)

	leader := statusAgent(t, cluster.DSN(db), "status test agent", agent.EventActive, nil)
	// The standby looks at the lease once a minute: between its looks it waits on LISTEN.
	standby := statusAgent(t, cluster.DSN(db), "status test standby", agent.EventStandingBy, func(o *agent.Options) {
		o.LeaderPing, o.LeaderTimeout = time.Minute, 10*time.Minute
	})

	// (a) A running agent, a failure 30 minutes ago: exit 1.
	got := env.run(t, "status")
	for try := 0; try < 5 && strings.Contains(got.stdout, kv("standbys", "0")); try++ {
		got = env.run(t, "status") // the status came while the standby swept the sessions before its look
	}
	var pid int
	if err := super.QueryRow(ctx, "SELECT pid FROM pgjobs.pgj_leader_").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if got.code != 1 {
		t.Errorf("status with a failure 30 minutes ago: exit %d, want 1", got.code)
	}
	wantLines(t, "status with a running agent", got.stdout,
		"database 1: "+target+" as "+cluster.User(),
		kv("enabled", "yes, schema version "+strconv.Itoa(sqlschema.Latest())),
		kv("standbys", "1"),
		kv("jobs", "2 (1 paused)"),
		kv("runs (24 h)", "1 ok, 1 error, 1 cancelled, 0 abandoned, 0 skipped, 1 missed; 0 running now"),
		kv("failures (1 h)", "1"),
		kv("tasks", "1 PLAN, 2 DONE, 1 FAIL, 1 STOP"),
		kv("waiting tasks", "none"),
		fmt.Sprintf("database 2: 127.0.0.1:%d/nowhere as postgres", unreachable),
		fmt.Sprintf("database 3: %s:%d/%s as %s", cluster.Host(), cluster.Port(), plain, cluster.User()),
	)
	for _, want := range []string{
		kv("active agent", fmt.Sprintf("status test agent, session %d, since ", pid)),
		kv("last failure", `"Billing" of "`+cluster.User()+`" error at `), " min ago): P0001: card declined\n",
		kv("error", "unreachable: connect to 127.0.0.1:"+strconv.Itoa(unreachable)+"/nowhere as postgres: "),
		kv("enabled", "no: not enabled (the database has no pgjobs schema; pgjobs enabledb -d "+plain+" enables it)\n"),
	} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("status with a running agent: no %q in:\n%s", want, got.stdout)
		}
	}
	wantSummary := fmt.Sprintf("pgjobs: status: 2 of 3 databases need attention: database 1 (%s): 1 failure in the last hour; database 2 (127.0.0.1:%d/nowhere): unreachable\n", target, unreachable)
	if got.stderr != wantSummary {
		t.Errorf("status summary:\n got %q\nwant %q", got.stderr, wantSummary)
	}

	// (d) The same as JSON.
	asJSON := env.run(t, "status", "--json")
	var doc []map[string]any
	if err := json.Unmarshal([]byte(asJSON.stdout), &doc); err != nil || asJSON.code != 1 || len(doc) != 3 {
		t.Fatalf("status --json: exit %d, %v:\n%s%s", asJSON.code, err, asJSON.stdout, asJSON.stderr)
	}
	first, agentDoc, runs, tasks := doc[0], doc[0]["agent"].(map[string]any), doc[0]["runs_24h"].(map[string]any), doc[0]["tasks"].(map[string]any)
	last := first["last_failure"].(map[string]any)
	if first["id"] != 1.0 || first["target"] != target || first["reachable"] != true || first["enabled"] != true || first["error"] != nil ||
		first["schema_version"] != float64(sqlschema.Latest()) || first["superuser"] != true || first["standbys"] != 1.0 ||
		agentDoc["state"] != "active" || agentDoc["name"] != "status test agent" || agentDoc["pid"] != float64(pid) ||
		first["jobs"] != 2.0 || first["paused_jobs"] != 1.0 || first["failures_1h"] != 1.0 || first["failures_24h"] != 2.0 ||
		runs["ok"] != 1.0 || runs["missed"] != 1.0 || runs["cancelled"] != 1.0 || tasks["done"] != 2.0 || tasks["plan"] != 1.0 || first["oldest_waiting_task"] != nil ||
		last["message"] != "card\ndeclined" || last["sqlstate"] != "P0001" || last["owner"] != cluster.User() || last["age_seconds"].(float64) < 29*60 || last["age_seconds"].(float64) > 40*60 {
		t.Errorf("status --json, database 1:\n%s", asJSON.stdout)
	}
	if _, err := time.Parse(time.RFC3339, agentDoc["since"].(string)); err != nil {
		t.Errorf("status --json: agent since: %v", err)
	}
	if doc[1]["reachable"] != false || !strings.Contains(fmt.Sprint(doc[1]["error"]), "connect to 127.0.0.1") || fmt.Sprint(doc[1]["problems"]) != "[unreachable]" ||
		doc[2]["reachable"] != true || doc[2]["enabled"] != false || len(doc[2]["problems"].([]any)) != 0 {
		t.Errorf("status --json, databases 2 and 3:\n%s", asJSON.stdout)
	}

	// The only failure is older than an hour, and the unreachable database is gone: exit 0.
	if _, err := super.Exec(ctx, `UPDATE pgjobs.pgj_run_ SET runfinished = now() - interval '90 minutes' WHERE runstatus = 'error'`); err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(env.conf)
	if err != nil {
		t.Fatal(err)
	}
	without := strings.Replace(string(conf), fmt.Sprintf("2=127.0.0.1|%d|nowhere|0|postgres|none|none\n", unreachable), "", 1)
	if err := os.WriteFile(env.conf, []byte(without), 0o644); err != nil {
		t.Fatal(err)
	}
	older := env.run(t, "status")
	if older.code != 0 || older.stderr != "" || !strings.HasSuffix(older.stdout, "\nok: 2 databases read, none with a failure in the last hour\n") {
		t.Errorf("status with an older failure: %#v", older)
	}
	wantLines(t, "status with an older failure", older.stdout, kv("failures (1 h)", "0"))
	if !strings.Contains(older.stdout, kv("last failure", `"Billing" of "`+cluster.User()+`" error at `)) || !strings.Contains(older.stdout, " (1 h ago): P0001: card declined\n") {
		t.Errorf("status with an older failure: the last failure is not shown:\n%s", older.stdout)
	}

	// (b) The agents stopped: the lease is released, tasks pile up.
	standby()
	leader()
	// The agents' sessions are closed; their backends exit a moment later, and one still listed
	// would be counted as a standby.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var left int
		if err := super.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'pgjobsagent%'`).Scan(&left); err != nil {
			t.Fatal(err)
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions of the stopped agents still on the server", left)
		}
		time.Sleep(20 * time.Millisecond) // polling the server, not a guess at a delay
	}
	if _, err := super.Exec(ctx, `INSERT INTO pgjobs.task (plan, input) VALUES (now() - interval '10 minutes', 'SELECT 1'), (now() - interval '2 minutes', 'SELECT 2')`); err != nil {
		t.Fatal(err)
	}
	stopped := env.run(t, "status")
	if stopped.code != 1 || !strings.Contains(stopped.stderr, "no agent is active: its jobs and tasks do not run") {
		t.Errorf("status with jobs and waiting tasks and no agent: exit %d, want 1 saying no agent is active: %s", stopped.code, stopped.stderr)
	}
	next := time.Date(2099, 12, 1, 17, 30, 0, 0, time.UTC).Local().Format(fireTimeLayout)
	wantLines(t, "status with no agent", stopped.stdout,
		kv("standbys", "0"),
		kv("tasks", "3 PLAN, 2 DONE, 1 FAIL, 1 STOP"),
	)
	for _, want := range []string{
		kv("active agent", "no active agent (last: status test agent, which took the lead at "),
		kv("next fire", `"Billing" of "`+cluster.User()+`" at `+next+" (in "),
		kv("waiting tasks", "2, the oldest planned for "), " (10 min ago)\n",
	} {
		if !strings.Contains(stopped.stdout, want) {
			t.Errorf("status with no agent: no %q in:\n%s", want, stopped.stdout)
		}
	}
}

// TestStatusWithoutDatabases: a configuration without databases has nothing to check: exit 0;
// a missing configuration file is an error.
func TestStatusWithoutDatabases(t *testing.T) {
	t.Parallel()
	env := newAdminEnv(t)
	if err := os.WriteFile(env.conf, []byte("system="+systemVersion()+"\nmaster=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want result
	}{
		{"text", nil, result{"no databases configured in " + env.conf + ": nothing to check\n", "", 0}},
		{"json", []string{"--json"}, result{"[]\n", "", 0}},
		{"arguments", []string{"sales"}, result{"", "pgjobs: status takes no arguments (got \"sales\"); see pgjobs status --help\nusage: pgjobs status [--config FILE] [--json]\n", 2}},
	} {
		if got := env.run(t, "status", tt.args...); got != tt.want {
			t.Errorf("%s:\n got %#v\nwant %#v", tt.name, got, tt.want)
		}
	}
	missing := runBinary(t, nil, "status", "--config", env.conf+".missing")
	if missing.code != 1 || !strings.Contains(missing.stderr, "no configuration file") {
		t.Errorf("status without a configuration file: %#v", missing)
	}
	help := runBinary(t, nil, "status", "--help")
	if help.code != 0 || !strings.Contains(help.stdout, "Examples:") || !strings.Contains(help.stdout, "pgjobs status --config") {
		t.Errorf("status --help: %#v", help)
	}
}

// TestStatusOtherRoleAndOlderSchema: a row whose user is no superuser reads its own jobs, and
// says the agent and the standbys are unknown rather than none; an older schema is read with the
// command that upgrades it, and a version before tasks says it has none.
func TestStatusOtherRoleAndOlderSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := newAdminEnv(t)
	db, old := cluster.NewDatabase(t), cluster.NewDatabase(t)
	for _, d := range []string{db, old} {
		if got := env.on(t, "enabledb", d, "-u", cluster.User()); got.code != 0 {
			t.Fatalf("enabledb %s: %#v", d, got)
		}
	}
	alice := cluster.NewRole(t, "alice", db)
	if got := env.on(t, "updatedb", db, "-u", alice); got.code != 0 {
		t.Fatalf("updatedb -u %s: %#v", alice, got)
	}
	// A session of the agent's role (a superuser), which alice may not look into.
	cfg, err := cluster.ConnConfig(db)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["application_name"] = "pgjobsagent 1"
	session, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close(ctx)
	// The schema says it is version 4, as one not yet upgraded would.
	if _, err := cluster.Connect(t, old).Exec(ctx, "UPDATE pgjobs.pgj_version_ SET version = 4"); err != nil {
		t.Fatal(err)
	}

	got := env.run(t, "status")
	if got.code != 0 {
		t.Errorf("status: exit %d, want 0: %s", got.code, got.stderr)
	}
	wantLines(t, "status", got.stdout,
		kv("role", alice+", no superuser: the jobs, runs and tasks below are its own"),
		kv("active agent", "unknown: "+alice+" may not read the leader lease pgjobs.pgj_leader_ (run pgjobs status as a superuser or as the agent's role)"),
		kv("standbys", "unknown (needs pg_read_all_stats: "+alice+" may not see what 1 agent session of other roles is doing)"),
		kv("enabled", fmt.Sprintf("yes, schema version 4: the pgjobs schema is version 4, older than version %d of this program: upgrade it with pgjobs updatesystem -v %s", sqlschema.Latest(), systemVersion())),
		kv("tasks", "none (schema version 4 has no tasks)"),
		kv("active agent", "no active agent (no agent has ever led)"),
	)
}
