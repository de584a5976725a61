package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/pgjobs/pgjobs/internal/pgtest"
)

var servingAt = regexp.MustCompile(`metrics on http://([^/ ]+)/metrics`)

// endpoint returns the address the agent's start line says it serves on.
func (p *agentProcess) endpoint(t *testing.T) string {
	t.Helper()
	var addr string
	waitFor(t, "the agent's start line", func() bool {
		m := servingAt.FindStringSubmatch(p.stderr.String())
		if m != nil {
			addr = m[1]
		}
		return m != nil || p.cmd.ProcessState != nil
	})
	if addr == "" {
		t.Fatalf("the agent did not say where it serves:\n%s", p.stderr.String())
	}
	return addr
}

// get returns the status and body of GET http://addr/path, with the token when not "".
func get(t *testing.T, addr, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	switch token {
	case "":
	case "lowercase-scheme":
		req.Header.Set("Authorization", "bearer s3cret")
	default:
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// hasLine reports whether the exposition has a line that starts with prefix and ends with value.
func hasLine(exposition, prefix, value string) bool {
	return slices.ContainsFunc(strings.Split(exposition, "\n"), func(l string) bool {
		return strings.HasPrefix(l, prefix) && strings.HasSuffix(l, " "+value)
	})
}

// TestListenServesMetricsAndReadiness: the built agent's /metrics after an ok run, a failing run and
// tasks, its /healthz and its /readyz.
func TestListenServesMetricsAndReadiness(t *testing.T) {
	t.Parallel()
	db, conf := enabled(t, 1)
	conn := cluster.Connect(t, db)
	if _, err := conn.Exec(context.Background(), `INSERT INTO pgjobs.task (input, "group") VALUES ('SELECT 1', 'nightly'), ('SELECT 1/0', 'nightly')`); err != nil {
		t.Fatal(err)
	}
	p := startAgent(t, conf, "--listen", "127.0.0.1:0")
	addr := p.endpoint(t)
	if code, body := get(t, addr, "/healthz", ""); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	var ready readiness
	waitFor(t, "/readyz to answer 200", func() bool {
		code, body := get(t, addr, "/readyz", "")
		return code == 200 && json.Unmarshal([]byte(body), &ready) == nil
	})
	if len(ready.Databases) != 1 || ready.Databases[0].Database != db || ready.Databases[0].State != "active" || ready.Databases[0].ID != 7 {
		t.Fatalf("/readyz: %+v", ready)
	}
	labels := `{database="` + db + `",id="7"`
	var metrics string
	// The task gauges are read at most every 10 s: waitFor gives them 20.
	waitFor(t, "the runs and tasks in /metrics", func() bool {
		_, metrics = get(t, addr, "/metrics", "")
		return hasLine(metrics, `pgjobs_job_runs_total`+labels+`,job_name="Hit",status="ok"}`, "1") &&
			hasLine(metrics, `pgjobs_job_runs_total`+labels+`,job_name="Boom",status="error"}`, "1") &&
			hasLine(metrics, `pgjobs_tasks_ended_total`+labels+`,state="DONE"}`, "1") &&
			hasLine(metrics, `pgjobs_tasks_ended_total`+labels+`,state="FAIL"}`, "1") &&
			hasLine(metrics, `pgjobs_tasks{database="`+db+`",group="nightly",id="7",state="DONE"}`, "1") &&
			hasLine(metrics, `pgjobs_tasks{database="`+db+`",group="nightly",id="7",state="FAIL"}`, "1")
	})
	for _, want := range [][2]string{
		{`pgjobs_database_active` + labels + `}`, "1"},
		{`pgjobs_database_ready` + labels + `}`, "1"},
		{`pgjobs_task_queue_wait_seconds_count` + labels + `}`, "2"},
		{`pgjobs_config_last_reload_successful`, "1"},
		{`pgjobs_build_info{`, "1"},
	} {
		if !hasLine(metrics, want[0], want[1]) {
			t.Errorf("no line %s ... %s in:\n%s", want[0], want[1], metrics)
		}
	}
	if !strings.Contains(metrics, `pgjobs_sessions_budget{server="`+cluster.Host()+":") {
		t.Errorf("no session budget of the server %s:\n%s", cluster.Host(), metrics)
	}
	// Startup runs have no scheduled time: no start delay.
	if hasLine(metrics, `pgjobs_job_start_delay_seconds_count`+labels+`}`, "1") {
		t.Errorf("a start delay for startup runs")
	}
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("exit %d:\n%s", code, p.stderr.String())
	}
}

// TestReadyzFollowsTheDatabase: /readyz answers 503 naming the database and why while its server is
// down, and 200 again once it is back.
func TestReadyzFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Close() })
	if !own.Own() {
		t.Skip("PGJOBS_TEST_DSN points at a server the test may not stop")
	}
	db, conf := enabledOn(t, own, 1)
	p := startAgent(t, conf, "--listen", "127.0.0.1:0")
	addr := p.endpoint(t)
	waitFor(t, "/readyz to answer 200", func() bool { code, _ := get(t, addr, "/readyz", ""); return code == 200 })
	if err := own.StopServer(ctx); err != nil {
		t.Fatal(err)
	}
	var ready readiness
	waitFor(t, "/readyz to answer 503", func() bool {
		code, body := get(t, addr, "/readyz", "")
		return code == 503 && json.Unmarshal([]byte(body), &ready) == nil
	})
	d := ready.Databases[0]
	if ready.Ready || d.Database != db || d.Ready || d.State != "unavailable" || d.Reason == "" {
		t.Fatalf("/readyz while the server is down: %+v", ready)
	}
	_, metrics := get(t, addr, "/metrics", "")
	if !hasLine(metrics, `pgjobs_database_up{database="`+db+`",id="7"}`, "0") {
		t.Errorf("pgjobs_database_up is not 0 while the server is down:\n%s", metrics)
	}
	if err := own.StartServer(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "/readyz to answer 200 again", func() bool { code, _ := get(t, addr, "/readyz", ""); return code == 200 })
	_, metrics = get(t, addr, "/metrics", "")
	if !hasLine(metrics, `pgjobs_database_reconnects_total{database="`+db+`",id="7"}`, "1") {
		t.Errorf("the outage is not counted:\n%s", metrics)
	}
	p.stop(t, syscall.SIGTERM)
}

// TestListenOffLoopbackNeedsAToken: an address other than loopback is refused without a token or
// --listen-insecure; a readable token file is refused; with a token, /metrics and /readyz need it
// and /healthz does not.
func TestListenOffLoopbackNeedsAToken(t *testing.T) {
	t.Parallel()
	conf := emptyConfig(t)
	p := startAgent(t, conf, "--listen", "0.0.0.0:0")
	if code := p.exitCode(t); code != 2 || !strings.Contains(p.stderr.String(), `--listen "0.0.0.0:0" is not a loopback address`) || !strings.Contains(p.stderr.String(), "--listen-token FILE") {
		t.Fatalf("exit %d, stderr:\n%s", code, p.stderr.String())
	}
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("s3cret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p = startAgent(t, conf, "--listen", "0.0.0.0:0", "--listen-token", token)
	if code := p.exitCode(t); code != 1 || !strings.Contains(p.stderr.String(), "other users may read or write it (mode 0644)") {
		t.Fatalf("a world-readable token: exit %d, stderr:\n%s", code, p.stderr.String())
	}
	if err := os.Chmod(token, 0o600); err != nil {
		t.Fatal(err)
	}
	p = startAgent(t, conf, "--listen", "0.0.0.0:0", "--listen-token", token)
	addr := strings.Replace(p.endpoint(t), "0.0.0.0", "127.0.0.1", 1)
	addr = strings.Replace(addr, "[::]", "127.0.0.1", 1)
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/metrics", "", 401},
		{"/metrics", "wrong", 401},
		{"/readyz", "", 401},
		{"/metrics", "s3cret", 200},
		{"/metrics", "lowercase-scheme", 200},
		{"/readyz", "s3cret", 200},
		{"/healthz", "", 200},
	} {
		if code, body := get(t, addr, c.path, c.token); code != c.want {
			t.Errorf("GET %s with token %q: %d %s, want %d", c.path, c.token, code, body, c.want)
		}
	}
	p.stop(t, syscall.SIGTERM)
	p = startAgent(t, conf, "--listen", "0.0.0.0:0", "--listen-token", token, "--listen-insecure")
	if code := p.exitCode(t); code != 2 || !strings.Contains(p.stderr.String(), "exclude each other") {
		t.Fatalf("--listen-token with --listen-insecure: exit %d, stderr:\n%s", code, p.stderr.String())
	}
	p = startAgent(t, conf, "--listen", "0.0.0.0:0", "--listen-insecure")
	addr = strings.Replace(strings.Replace(p.endpoint(t), "0.0.0.0", "127.0.0.1", 1), "[::]", "127.0.0.1", 1)
	if code, _ := get(t, addr, "/metrics", ""); code != 200 {
		t.Errorf("--listen-insecure: GET /metrics %d", code)
	}
	p.stop(t, syscall.SIGTERM)
}
