package metrics

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// OtherGroups is the group label of the tasks of the groups of a database past Options.MaxJobs.
const OtherGroups = "(other)"

// scrapeTimeout bounds what a scrape reads from the databases.
const scrapeTimeout = 5 * time.Second

// defaultTaskReadEvery is how often, at most, the scrapes read the task tables: scrapes in
// between, from several Prometheus servers say, get the last counts, so that scraping costs the
// databases one read of each task table every 10 s however often it comes.
const defaultTaskReadEvery = 10 * time.Second

// Source supplies what the metrics read at scrape time.
type Source interface {
	// Sessions returns the session budget of each server.
	Sessions() []Sessions
	// Tasks returns the task counts of each database this agent leads.
	Tasks(ctx context.Context) []Tasks
}

// Sessions is the session budget of one server.
type Sessions struct {
	Server  string // host:port, as the configuration names it
	Budget  int    // the sessions the agent may open there; 0 until known
	InUse   int    // open, reserved or lent
	Waiting int    // runs and tasks waiting for a session
}

// Tasks is what a database's task table holds.
type Tasks struct {
	ID       int
	Database string
	Err      error       // the read failed: nothing else is set
	Groups   []TaskGroup // the count of each group and state with rows
	// OldestWaiting is the age of the oldest task due and not started; 0 when none.
	OldestWaiting time.Duration
}

// TaskGroup is the number of tasks of one group in one state.
type TaskGroup struct {
	Group, State string
	Count        int64
}

// scraped collects the metrics read at scrape time from the Source, and the count of its reads
// that failed.
type scraped struct {
	errors   *prometheus.CounterVec
	maxLabel func() int
	known    func(id int) bool // whether database agent id is configured: a removed one counts no error
	every    time.Duration     // how often, at most, the task tables are read; < 0: at each scrape

	mu     sync.Mutex
	source Source

	readMu sync.Mutex // one read of the task tables at a time
	readAt time.Time  // when they were last read
	tasks  []Tasks    // what that read found
}

var (
	descInUse   = prometheus.NewDesc(NameSessionsInUse, "Sessions of the agent on a server: open, reserved or lent.", []string{"server"}, nil)
	descBudget  = prometheus.NewDesc(NameSessionsBudget, "The session budget of a server: the most sessions the agent opens there (0 until known).", []string{"server"}, nil)
	descWaiting = prometheus.NewDesc(NameSessionsWaiting, "Runs and tasks waiting for a session of a server.", []string{"server"}, nil)
	descTasks   = prometheus.NewDesc(NameTasks, "Tasks by group and state, read from the task table of each database this agent leads. Groups past the configured number per database count as group=\""+OtherGroups+"\".", []string{"id", "database", "group", "state"}, nil)
	descOldest  = prometheus.NewDesc(NameTaskOldest, "Age of the oldest task due and not started, in seconds (0 when none), of each database this agent leads.", dbLabels, nil)
)

func (s *scraped) set(src Source) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.source = src
}

// Describe implements prometheus.Collector.
func (s *scraped) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descInUse, descBudget, descWaiting, descTasks, descOldest} {
		ch <- d
	}
	s.errors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *scraped) Collect(ch chan<- prometheus.Metric) {
	defer s.errors.Collect(ch) // after this scrape's failed reads are counted
	s.mu.Lock()
	src := s.source
	s.mu.Unlock()
	if src == nil {
		return
	}
	gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
		for i := range labels {
			labels[i] = labelValue(labels[i])
		}
		if m, err := prometheus.NewConstMetric(desc, prometheus.GaugeValue, v, labels...); err == nil {
			ch <- m
		}
	}
	for _, b := range src.Sessions() {
		gauge(descInUse, float64(b.InUse), b.Server)
		gauge(descBudget, float64(b.Budget), b.Server)
		gauge(descWaiting, float64(b.Waiting), b.Server)
	}
	for _, t := range s.readTasks(src) {
		id := strconv.Itoa(t.ID)
		if t.Err != nil {
			continue
		}
		for _, g := range boundGroups(t.Groups, s.maxLabel()) {
			gauge(descTasks, float64(g.Count), id, t.Database, g.Group, g.State)
		}
		gauge(descOldest, t.OldestWaiting.Seconds(), id, t.Database)
	}
}

// readTasks returns the task counts of the databases: read now, or by a read of the last
// s.every. The failures of a read are counted once, when it is made.
func (s *scraped) readTasks(src Source) []Tasks {
	s.readMu.Lock()
	defer s.readMu.Unlock()
	if !s.readAt.IsZero() && time.Since(s.readAt) < s.every {
		return s.tasks
	}
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	s.tasks, s.readAt = src.Tasks(ctx), time.Now()
	for _, t := range s.tasks {
		if t.Err != nil && s.known(t.ID) {
			s.errors.WithLabelValues(strconv.Itoa(t.ID), labelValue(t.Database)).Inc()
		}
	}
	return s.tasks
}

// boundGroups keeps the labels of the n groups with the most tasks and sums the others' counts
// by state under OtherGroups.
func boundGroups(groups []TaskGroup, n int) []TaskGroup {
	total := map[string]int64{}
	merged := map[[2]string]int64{} // by name and state, apart from groups: the next scrape reads them again
	for _, g := range groups {
		total[g.Group] += g.Count
		merged[[2]string{g.Group, g.State}] += g.Count
	}
	groups = groups[:0:0]
	for k, c := range merged {
		groups = append(groups, TaskGroup{Group: k[0], State: k[1], Count: c})
	}
	slices.SortFunc(groups, func(a, b TaskGroup) int {
		if a.Group != b.Group {
			return strings.Compare(a.Group, b.Group)
		}
		return strings.Compare(a.State, b.State)
	})
	_, hasOther := total[OtherGroups]
	if len(total) <= n && !hasOther {
		return groups
	}
	delete(total, OtherGroups) // a group a role named "(other)" counts with the others, never beside them
	names := make([]string, 0, len(total))
	for name := range total {
		names = append(names, name)
	}
	slices.SortFunc(names, func(a, b string) int {
		if total[a] != total[b] {
			return int(min(1, max(-1, total[b]-total[a])))
		}
		return map[bool]int{true: -1, false: 1}[a < b]
	})
	kept := map[string]bool{}
	for _, name := range names[:min(n, len(names))] {
		kept[name] = true
	}
	var out []TaskGroup
	other := map[string]int64{}
	for _, g := range groups {
		if kept[g.Group] {
			out = append(out, g)
		} else {
			other[g.State] += g.Count
		}
	}
	states := make([]string, 0, len(other))
	for st := range other {
		states = append(states, st)
	}
	slices.Sort(states)
	for _, st := range states {
		out = append(out, TaskGroup{Group: OtherGroups, State: st, Count: other[st]})
	}
	return out
}
