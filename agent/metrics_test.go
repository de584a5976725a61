package agent_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/fakeclock"
	"github.com/pgjobs/pgjobs/internal/metrics"
	dto "github.com/prometheus/client_model/go"
)

// metricValue returns the sum of the series of family name whose labels include want: their
// values, or their sample counts for histograms.
func metricValue(t *testing.T, m *metrics.Agent, name string, want map[string]string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if !labelsInclude(s.GetLabel(), want) {
				continue
			}
			switch {
			case s.Counter != nil:
				sum += s.GetCounter().GetValue()
			case s.Gauge != nil:
				sum += s.GetGauge().GetValue()
			case s.Histogram != nil:
				sum += float64(s.GetHistogram().GetSampleCount())
			}
		}
	}
	return sum
}

func labelsInclude(labels []*dto.LabelPair, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range labels {
			found = found || (l.GetName() == k && l.GetValue() == v)
		}
		if !found {
			return false
		}
	}
	return true
}

// TestMetricsCountRunsFailuresAndSkippedFires: what the jobs service did reads the same in the
// metrics: an ok run, a failing job's errors and a fire skipped behind a run still going, the start
// delays of the runs, and the database's state.
func TestMetricsCountRunsFailuresAndSkippedFires(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	db.exec(t, `SELECT pgj_create_schedule('Every1', 'I 0:01'),
		pgj_create_job('Slow', 'slow(''Slow'', 1.5)', null, 'Every1'),
		pgj_create_job('Broken', 'fail()', null, 'Every1')`)
	m := metrics.New(metrics.Options{MaxJobs: 10})
	clock := fakeclock.New(t0)
	_, out := startAgentWith(t, clock, func(o *agent.Options) { o.Metrics = m }, db)
	if !out.wait(t, 1, agent.EventActive, 15*time.Second) {
		t.Fatal("the agent did not become active")
	}
	ours := map[string]string{"id": "1", "database": db.name}
	if got := metricValue(t, m, metrics.NameDatabaseActive, ours); got != 1 {
		t.Fatalf("%s = %v, want 1", metrics.NameDatabaseActive, got)
	}
	mustSleepUntil(t, clock, t0.Add(time.Minute))
	clock.Set(t0.Add(time.Minute))
	mustSleepUntil(t, clock, t0.Add(2*time.Minute))
	clock.Set(t0.Add(2 * time.Minute)) // Slow's first run sleeps 1.5 s: still going
	runs := db.waitRuns(t, 4)
	// Each (job, status) counts as often as the run history has it; Broken's second fire may also
	// have been skipped, its first run's bookkeeping still going.
	want := map[[2]string]float64{{"Slow", "ok"}: 0, {"Slow", "skipped"}: 0, {"Slow", "error"}: 0, {"Broken", "error"}: 0, {"Broken", "skipped"}: 0, {"Broken", "ok"}: 0}
	started := 0.0
	for _, r := range runs {
		f := strings.Fields(r)
		want[[2]string{f[0], f[1]}]++
		if f[1] != "skipped" && !strings.HasSuffix(r, " 53300") { // a refused session: no start
			started++
		}
	}
	if want[[2]string{"Slow", "skipped"}] != 1 || want[[2]string{"Broken", "error"}] < 1 {
		// The server can refuse sessions when many tests run at once (53300): then Slow's first run
		// did not overlap its second fire. The counts must still match the history.
		t.Logf("runs %v: not the usual Slow ok at 10:01, skipped at 10:02, and Broken failing", runs)
	}
	for k, n := range want {
		labels := map[string]string{"database": db.name, "job_name": k[0], "status": k[1]}
		if got := metricValue(t, m, metrics.NameJobRuns, labels); got != n {
			t.Errorf("%s%v = %v, want %v (runs %v)", metrics.NameJobRuns, labels, got, n, runs)
		}
	}
	// The runs that started on their fire, on time on the fake clock.
	if got := metricValue(t, m, metrics.NameJobStartDelay, ours); got != started {
		t.Errorf("%s has %v samples, want %v", metrics.NameJobStartDelay, got, started)
	}
	for _, name := range []string{metrics.NameDatabaseUp, metrics.NameDatabaseReady} {
		if got := metricValue(t, m, name, ours); got != 1 {
			t.Errorf("%s = %v, want 1", name, got)
		}
	}
}

// TestMetricsCountTasks: tasks that end DONE and FAIL, with their waits and run times, and the task
// table's rows by group and state read at scrape time.
func TestMetricsCountTasks(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{MaxJobs: 10, TaskReadEvery: -1})
	db := newTestDB(t)
	role := cluster.NewRole(t, "alice", db.name)
	ended := &endedTasks{changed: make(chan struct{})}
	master, _ := startAgentWith(t, agent.RealClock{}, func(o *agent.Options) {
		o.Start, o.Metrics, o.OnTasksWritten = time.Time{}, m, ended.report
	}, db)
	m.SetSource(master)
	tasks := taskDB{testDB: db, role: role, as: newPool(t, db.name, role), su: newPool(t, db.name, ""), ended: ended}
	ok := tasks.insert(t, `input, "group"`, "SELECT 1", "reports")
	failing := tasks.insert(t, `input, "group"`, "SELECT 1/0", "reports")
	tasks.insert(t, `input, "group", plan`, "SELECT 1", "later", time.Now().Add(time.Hour))
	tasks.waitTask(t, ok, 15*time.Second, "DONE")
	tasks.waitTask(t, failing, 15*time.Second, "FAIL")
	ours := map[string]string{"id": "1", "database": db.name}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{metrics.NameTasksEnded, map[string]string{"state": "DONE"}, 1},
		{metrics.NameTasksEnded, map[string]string{"state": "FAIL"}, 1},
		{metrics.NameTaskQueueWait, nil, 2},
		{metrics.NameTaskRunDuration, nil, 2},
		{metrics.NameTasks, map[string]string{"group": "reports", "state": "DONE"}, 1},
		{metrics.NameTasks, map[string]string{"group": "reports", "state": "FAIL"}, 1},
		{metrics.NameTasks, map[string]string{"group": "later", "state": "PLAN"}, 1},
		{metrics.NameTaskOldest, nil, 0}, // the PLAN task is not due yet
	} {
		labels := map[string]string{}
		for k, v := range ours {
			labels[k] = v
		}
		for k, v := range c.labels {
			labels[k] = v
		}
		if got := metricValue(t, m, c.name, labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// A task due and not started, behind the running one of its group (max 0: one at a time):
	// the oldest waiting age counts from its plan.
	long := tasks.insert(t, `input, "group"`, "SELECT pg_sleep(2)", "serial")
	tasks.waitTask(t, long, 15*time.Second, "WORK")
	tasks.insert(t, `input, "group"`, "SELECT 1", "serial")
	if got := metricValue(t, m, metrics.NameTaskOldest, ours); got <= 0 {
		t.Errorf("%s = %v with a task waiting behind its group's running one, want > 0", metrics.NameTaskOldest, got)
	}
	if got := metricValue(t, m, metrics.NameTasks, map[string]string{"database": db.name, "group": "serial", "state": "PLAN"}); got != 1 {
		t.Errorf("%s{serial,PLAN} = %v, want 1", metrics.NameTasks, got)
	}
}

// TestStatusServing: the master serves its databases from the first Apply until Stop, and while it
// stops it shows the agents it stops, not an empty list that reads as all well.
func TestStatusServing(t *testing.T) {
	t.Parallel()
	db := newTestDB(t)
	m := agent.NewMaster(agent.Options{Location: time.UTC, Name: "status " + t.Name()}, slog.New(slog.DiscardHandler))
	if _, serving := m.Status(); serving {
		t.Fatal("serving before Apply")
	}
	m.Apply([]agent.Database{{ID: 4, DSN: db.on.DSN(db.name)}})
	statuses, serving := m.Status()
	if !serving || len(statuses) != 1 || statuses[0].ID != 4 || statuses[0].Database != db.name {
		t.Fatalf("after Apply: %+v, serving %v", statuses, serving)
	}
	m.Stop(5 * time.Second)
	statuses, serving = m.Status()
	if serving || len(statuses) != 1 || statuses[0].State != agent.StateStopping || statuses[0].Ready() {
		t.Fatalf("after Stop: %+v, serving %v", statuses, serving)
	}
}
