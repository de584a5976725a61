package metrics_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/pgjobs/pgjobs/internal/metrics"
)

// source is a fixed Source.
type source struct {
	sessions []metrics.Sessions
	tasks    []metrics.Tasks
}

func (s source) Sessions() []metrics.Sessions          { return s.sessions }
func (s source) Tasks(context.Context) []metrics.Tasks { return s.tasks }

func scrape(t *testing.T, a *metrics.Agent) string {
	t.Helper()
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, body)
	}
	return string(body)
}

// has reports whether the exposition has the line want.
func has(exposition, want string) bool {
	return slices.Contains(strings.Split(exposition, "\n"), want)
}

func TestLabelsStayBounded(t *testing.T) {
	a := metrics.New(metrics.Options{MaxJobs: 2, Version: "v1", Commit: "abc"})
	d := a.Database(1, "billing")
	a.Database(2, "broken")
	for _, job := range []string{"a", "b", "c", "d", "a"} {
		d.Fires(job, "skipped", 1)
	}
	var groups []metrics.TaskGroup
	for _, g := range []struct {
		name  string
		count int64
	}{{"big", 50}, {"mid", 20}, {"small1", 2}, {"small2", 3}} {
		groups = append(groups, metrics.TaskGroup{Group: g.name, State: "PLAN", Count: g.count}, metrics.TaskGroup{Group: g.name, State: "DONE", Count: 1})
	}
	a.SetSource(source{
		sessions: []metrics.Sessions{{Server: "db1:5432", Budget: 48, InUse: 12, Waiting: 3}},
		tasks: []metrics.Tasks{
			{ID: 1, Database: "billing", Groups: groups, OldestWaiting: 90 * time.Second},
			{ID: 2, Database: "broken", Err: errors.New("connection refused")},
		},
	})
	out := scrape(t, a)
	for _, want := range []string{
		`pgjobs_job_runs_total{database="billing",id="1",job_name="a",status="skipped"} 2`,
		`pgjobs_job_runs_total{database="billing",id="1",job_name="b",status="skipped"} 1`,
		`pgjobs_job_runs_total{database="billing",id="1",job_name="(other)",status="skipped"} 2`,
		`pgjobs_tasks{database="billing",group="big",id="1",state="PLAN"} 50`,
		`pgjobs_tasks{database="billing",group="mid",id="1",state="PLAN"} 20`,
		`pgjobs_tasks{database="billing",group="(other)",id="1",state="PLAN"} 5`,
		`pgjobs_tasks{database="billing",group="(other)",id="1",state="DONE"} 2`,
		`pgjobs_task_oldest_waiting_seconds{database="billing",id="1"} 90`,
		`pgjobs_scrape_errors_total{database="broken",id="2"} 1`,
		`pgjobs_sessions_budget{server="db1:5432"} 48`,
		`pgjobs_sessions_in_use{server="db1:5432"} 12`,
		`pgjobs_sessions_waiting{server="db1:5432"} 3`,
		`pgjobs_database_ready{database="billing",id="1"} 0`,
	} {
		if !has(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(out, `job_name="c"`) || strings.Contains(out, `group="small1"`) {
		t.Errorf("a label past the bound:\n%s", out)
	}
	if t.Failed() {
		t.Logf("exposition:\n%s", out)
	}
}

func TestRunsAndStates(t *testing.T) {
	a := metrics.New(metrics.Options{MaxJobs: 10, Version: "v1", Commit: "abc"})
	a.Started(time.Unix(1000, 0))
	a.Loaded(false, time.Unix(2000, 0))
	d := a.Database(3, "reports")
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	d.RunEnded("Nightly", "ok", &at, at.Add(30*time.Millisecond), at.Add(2*time.Second))
	d.RunEnded("Startup", "error", nil, at, at.Add(time.Second))
	d.State(true, false, true)
	d.Outage()
	d.TaskStarted(time.Second)
	d.TaskEnded("DONE", 3*time.Second)
	d.TaskEnded("GONE", 0)
	d.TaskRetried()
	d.TasksReset(4)
	out := scrape(t, a)
	for _, want := range []string{
		`pgjobs_build_info{commit="abc",goversion="` + runtimeVersion(out) + `",version="v1"} 1`,
		`pgjobs_config_reloads_total{result="error"} 1`,
		`pgjobs_config_reloads_total{result="ok"} 0`,
		`pgjobs_config_last_reload_successful 0`,
		`pgjobs_config_last_reload_success_timestamp_seconds 1000`,
		`pgjobs_job_runs_total{database="reports",id="3",job_name="Nightly",status="ok"} 1`,
		`pgjobs_job_runs_total{database="reports",id="3",job_name="Startup",status="error"} 1`,
		`pgjobs_job_start_delay_seconds_bucket{database="reports",id="3",le="0.025"} 0`,
		`pgjobs_job_start_delay_seconds_bucket{database="reports",id="3",le="0.05"} 1`,
		`pgjobs_job_start_delay_seconds_count{database="reports",id="3"} 1`,
		`pgjobs_job_run_duration_seconds_count{database="reports",id="3"} 2`,
		`pgjobs_database_up{database="reports",id="3"} 1`,
		`pgjobs_database_active{database="reports",id="3"} 0`,
		`pgjobs_database_standby{database="reports",id="3"} 1`,
		`pgjobs_database_ready{database="reports",id="3"} 1`,
		`pgjobs_database_reconnects_total{database="reports",id="3"} 1`,
		`pgjobs_task_queue_wait_seconds_count{database="reports",id="3"} 1`,
		`pgjobs_tasks_ended_total{database="reports",id="3",state="DONE"} 1`,
		`pgjobs_tasks_ended_total{database="reports",id="3",state="GONE"} 1`,
		`pgjobs_task_run_duration_seconds_count{database="reports",id="3"} 1`,
		`pgjobs_task_retries_total{database="reports",id="3"} 1`,
		`pgjobs_task_resets_total{database="reports",id="3"} 4`,
	} {
		if !has(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	// A database removed from the configuration leaves no series, and its late reports add none.
	a.Forget(3)
	d.TaskRetried()
	if out := scrape(t, a); strings.Contains(out, `database="reports"`) {
		t.Errorf("series of a forgotten database:\n%s", out)
	}
	if t.Failed() {
		t.Logf("exposition:\n%s", out)
	}
}

// runtimeVersion returns the goversion label the exposition has.
func runtimeVersion(out string) string {
	_, rest, _ := strings.Cut(out, `goversion="`)
	v, _, _ := strings.Cut(rest, `"`)
	return v
}

// TestNamesAreThoseExported: Names lists every pgjobs_ family the agent exports, and nothing else.
func TestNamesAreThoseExported(t *testing.T) {
	a := metrics.New(metrics.Options{MaxJobs: 1})
	a.Started(time.Now())
	d := a.Database(1, "x")
	a.Database(2, "")
	at := time.Now()
	d.RunEnded("j", "ok", &at, at, at)
	d.Outage()
	d.TaskStarted(0)
	d.TaskEnded("DONE", time.Second)
	d.TaskRetried()
	d.TasksReset(1)
	a.SetSource(source{sessions: []metrics.Sessions{{Server: "s"}}, tasks: []metrics.Tasks{{ID: 1, Database: "x", Groups: []metrics.TaskGroup{{Group: "g", State: "PLAN", Count: 1}}}, {ID: 2, Err: errors.New("x")}}})
	families, err := a.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "pgjobs_") {
			got = append(got, f.GetName())
		}
	}
	want := metrics.Names()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("exported %v\nNames() %v", got, want)
	}
}

// TestNilDoesNothing: an agent without metrics calls the same methods on nil.
func TestNilDoesNothing(t *testing.T) {
	var a *metrics.Agent
	d := a.Database(1, "x")
	d.RunEnded("j", "ok", nil, time.Now(), time.Now())
	d.Fires("j", "missed", 2)
	d.State(true, true, false)
	d.TaskEnded("DONE", time.Second)
	a.Loaded(true, time.Now())
	a.Forget(1)
}

// TestLabelsFromAnyBytes: a job or task group named with bytes that are not UTF-8 (a SQL_ASCII
// database lets a role do that), or with control or format characters, reads escaped instead of
// panicking or reaching the terminal of whoever reads the scrape; names that differ only there, or
// that spell such an escape out, keep labels of their own; a group a role named "(other)" counts
// with the groups past the bound, never beside them.
func TestLabelsFromAnyBytes(t *testing.T) {
	jobs := metrics.New(metrics.Options{MaxJobs: 6, TaskReadEvery: -1})
	d := jobs.Database(1, "ascii\xff")
	for _, job := range []string{"J\xff", "J\xfe", `J\xff`, "K\x1b[2J\u202e", `K\x1b[2J\u202e`, "(other)"} {
		d.Fires(job, "skipped", 1)
	}
	at := time.Now()
	d.RunEnded("J\xff", "ok", &at, at, at)
	groups := metrics.New(metrics.Options{MaxJobs: 2, TaskReadEvery: -1}) // two groups keep labels of their own
	groups.Database(1, "ascii\xff")
	groups.SetSource(source{tasks: []metrics.Tasks{{ID: 1, Database: "ascii\xff", Groups: []metrics.TaskGroup{
		{Group: "g\xff", State: "PLAN", Count: 3}, {Group: "g\x1b]0;T\a", State: "PLAN", Count: 4}, {Group: "(other)", State: "PLAN", Count: 5}, {Group: "h", State: "PLAN", Count: 2},
	}}}})
	out := scrape(t, jobs) + scrape(t, groups)
	for _, want := range []string{
		`pgjobs_job_runs_total{database="ascii\\xff",id="1",job_name="J\\xff",status="skipped"} 1`,
		`pgjobs_job_runs_total{database="ascii\\xff",id="1",job_name="J\\xff",status="ok"} 1`,
		`pgjobs_job_runs_total{database="ascii\\xff",id="1",job_name="J\\xfe",status="skipped"} 1`,
		`pgjobs_job_runs_total{database="ascii\\xff",id="1",job_name="J\\\\xff",status="skipped"} 1`,
		`pgjobs_job_runs_total{database="ascii\\xff",id="1",job_name="K\\x1b[2J\\u202e",status="skipped"} 1`,
		`pgjobs_job_runs_total{database="ascii\\xff",id="1",job_name="K\\\\x1b[2J\\\\u202e",status="skipped"} 1`,
		`pgjobs_job_runs_total{database="ascii\\xff",id="1",job_name="\\(other)",status="skipped"} 1`, // a role's, not the bound's
		`pgjobs_tasks{database="ascii\\xff",group="g\\x1b]0;T\\a",id="1",state="PLAN"} 4`,
		`pgjobs_tasks{database="ascii\\xff",group="g\\xff",id="1",state="PLAN"} 3`,
		`pgjobs_tasks{database="ascii\\xff",group="(other)",id="1",state="PLAN"} 7`,
	} {
		if !has(out, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(out, `job_name="(other)",`) {
		t.Errorf("a job a role named (other) counts with the jobs past the bound")
	}
	if strings.ContainsFunc(out, func(r rune) bool { return r == 0x1b || r == 0x202e || r == utf8.RuneError }) {
		t.Errorf("the exposition has an ESC, a bidi override or U+FFFD")
	}
	if t.Failed() {
		t.Logf("exposition:\n%s", out)
	}
}
