package metrics

import (
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// OtherJobs is the job_name label of the runs of the jobs of a database past Options.MaxJobs.
const OtherJobs = "(other)"

// Options are the settings of an agent's metrics.
type Options struct {
	// MaxJobs is how many jobs of one database get a job_name label of their own, the first seen
	// first; the runs of the others count under OtherJobs. 0 means none: every run counts there.
	MaxJobs int
	// Version and Commit are the agent's build, for pgjobs_build_info.
	Version, Commit string
	// TaskReadEvery is how often, at most, the scrapes read the task tables; those in between get
	// the last counts. 0 means 10 s; a negative value, at each scrape (for tests).
	TaskReadEvery time.Duration
}

// Agent holds the metrics of one agent process and serves them.
type Agent struct {
	reg     *prometheus.Registry
	maxJobs int

	reloads                             *prometheus.CounterVec
	reloadOK, reloadTime                prometheus.Gauge
	up, active, standby, ready          *prometheus.GaugeVec
	reconnects                          *prometheus.CounterVec
	runs                                *prometheus.CounterVec
	startDelay, runDuration             *prometheus.HistogramVec
	tasksEnded, taskRetries, taskResets *prometheus.CounterVec
	taskWait, taskRun                   *prometheus.HistogramVec
	scrapeErrors                        *prometheus.CounterVec
	sources                             *scraped
	databasesMu                         sync.Mutex
	databases                           map[int]*Database
}

// dbLabels are the labels of a database's metrics: the configuration's id and the database's name.
var dbLabels = []string{"id", "database"}

// delayBuckets are the buckets of start delays and queue waits, in seconds: from a few milliseconds
// (a run on time) to minutes (a backlog).
var delayBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// durationBuckets are the buckets of run times, in seconds: from a millisecond to an hour.
var durationBuckets = []float64{0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600}

// New returns the metrics of an agent; Source, once set, supplies what is read at scrape time.
func New(o Options) *Agent {
	a := &Agent{reg: prometheus.NewRegistry(), maxJobs: max(0, o.MaxJobs), databases: map[int]*Database{}}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, labels)
	}
	histogram := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, dbLabels)
	}
	build := gauge(NameBuildInfo, "The agent's build: 1, with its version, commit and Go version as labels.", "version", "commit", "goversion")
	build.WithLabelValues(o.Version, o.Commit, runtime.Version()).Set(1)
	a.reloads = counter(NameReloads, "Loads of the configuration file after the first, by result (ok, error).", "result")
	a.reloadOK = prometheus.NewGauge(prometheus.GaugeOpts{Name: NameReloadOK, Help: "1 when the last load of the configuration file succeeded, 0 when the last good one stays in force."})
	a.reloadTime = prometheus.NewGauge(prometheus.GaugeOpts{Name: NameReloadTime, Help: "When the configuration in force was loaded, in Unix seconds."})
	a.up = gauge(NameDatabaseUp, "1 while the database agent has a session on its database.", dbLabels...)
	a.active = gauge(NameDatabaseActive, "1 while this agent is the database's active agent: its jobs and tasks run here.", dbLabels...)
	a.standby = gauge(NameDatabaseStandby, "1 while this agent stands by behind a live active agent of the database.", dbLabels...)
	a.ready = gauge(NameDatabaseReady, "1 when the database agent is up and active or standing by (as /readyz).", dbLabels...)
	a.reconnects = counter(NameReconnects, "Outages of the database agent's session: each is followed by reconnecting.", dbLabels...)
	a.runs = counter(NameJobRuns, "Fires of jobs by how they ended: ok, error, cancelled, abandoned, skipped, missed. Jobs past the configured number per database count as job_name=\""+OtherJobs+"\".", "id", "database", "job_name", "status")
	a.startDelay = histogram(NameJobStartDelay, "How long after its scheduled time a run started, in seconds.", delayBuckets)
	a.runDuration = histogram(NameJobRunDuration, "How long job runs took, in seconds.", durationBuckets)
	a.tasksEnded = counter(NameTasksEnded, "Task runs ended by this agent, by the task's new state: DONE, FAIL, GONE.", "id", "database", "state")
	a.taskWait = histogram(NameTaskQueueWait, "How long tasks waited from their plan (their insert, for a task planned now) to their start, in seconds.", delayBuckets)
	a.taskRun = histogram(NameTaskRunDuration, "How long task runs took, in seconds.", durationBuckets)
	a.taskRetries = counter(NameTaskRetries, "Failed task runs planned again for another attempt.", dbLabels...)
	a.taskResets = counter(NameTaskResets, "Tasks left taken or working by an agent that died, put back to PLAN to run again.", dbLabels...)
	a.scrapeErrors = counter(NameScrapeErrors, "Reads of a database at scrape time that failed (its task gauges are then missing).", dbLabels...)
	every := o.TaskReadEvery
	if every == 0 {
		every = defaultTaskReadEvery
	}
	a.sources = &scraped{errors: a.scrapeErrors, maxLabel: func() int { return a.maxJobs }, known: a.known, every: every}
	a.reg.MustRegister(build, a.reloads, a.reloadOK, a.reloadTime, a.up, a.active, a.standby, a.ready, a.reconnects,
		a.runs, a.startDelay, a.runDuration, a.tasksEnded, a.taskWait, a.taskRun, a.taskRetries, a.taskResets,
		a.sources, // with a.scrapeErrors, which it counts as it reads
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return a
}

// Handler serves the metrics in the Prometheus exposition formats.
func (a *Agent) Handler() http.Handler {
	// One scrape at a time: the others wait for it (up to their timeout) rather than read too.
	return promhttp.HandlerFor(a.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 1})
}

// Registry returns the registry of the metrics, for tests that gather them.
func (a *Agent) Registry() *prometheus.Registry { return a.reg }

// SetSource sets what the metrics read at scrape time: the sessions and the tasks.
func (a *Agent) SetSource(s Source) { a.sources.set(s) }

// Loaded tells that the configuration file was loaded again (ok) or that the last good one stays.
func (a *Agent) Loaded(ok bool, at time.Time) {
	if a == nil {
		return
	}
	result := "error"
	if ok {
		result = "ok"
		a.reloadTime.Set(float64(at.UnixNano()) / 1e9)
		a.reloadOK.Set(1)
	} else {
		a.reloadOK.Set(0)
	}
	a.reloads.WithLabelValues(result).Inc()
}

// Started tells that the first configuration was loaded at `at`: it is in force, and no reload
// counts yet.
func (a *Agent) Started(at time.Time) {
	if a == nil {
		return
	}
	a.reloadOK.Set(1)
	a.reloadTime.Set(float64(at.UnixNano()) / 1e9)
	a.reloads.WithLabelValues("ok").Add(0)
	a.reloads.WithLabelValues("error").Add(0)
}

// Database returns the metrics of the database agent id, serving the database name; the same for
// the same id and name. A nil *Agent gives a nil *Database, whose methods do nothing.
func (a *Agent) Database(id int, name string) *Database {
	if a == nil {
		return nil
	}
	a.databasesMu.Lock()
	defer a.databasesMu.Unlock()
	if d, ok := a.databases[id]; ok && d.name == labelValue(name) {
		return d
	}
	d := &Database{a: a, id: strconv.Itoa(id), name: labelValue(name), jobs: map[string]bool{}}
	a.databases[id] = d
	d.State(false, false, false)
	return d
}

// known reports whether database agent id has metrics: it is configured.
func (a *Agent) known(id int) bool {
	a.databasesMu.Lock()
	defer a.databasesMu.Unlock()
	_, ok := a.databases[id]
	return ok
}

// Forget removes the series of database agent id, removed from the configuration.
func (a *Agent) Forget(id int) {
	if a == nil {
		return
	}
	a.databasesMu.Lock()
	d, ok := a.databases[id]
	delete(a.databases, id)
	a.databasesMu.Unlock()
	if !ok {
		return
	}
	d.gone.Store(true)
	match := prometheus.Labels{"id": d.id, "database": d.name}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		a.up, a.active, a.standby, a.ready, a.reconnects, a.runs, a.startDelay, a.runDuration,
		a.tasksEnded, a.taskWait, a.taskRun, a.taskRetries, a.taskResets, a.scrapeErrors,
	} {
		v.DeletePartialMatch(match)
	}
}
