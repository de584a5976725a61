// Command agentbench measures the agent on a throwaway cluster and prints its figures: how late
// runs start after their minute, the statements it sends while idle, and its memory and
// connections with many databases.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/pgtest"
	"github.com/pgjobs/pgjobs/sqlschema"
)

const benchFunctions = `
CREATE TABLE bench_hits (job text, at timestamptz);
CREATE FUNCTION bench_hit(job text) RETURNS void LANGUAGE sql AS $$ INSERT INTO bench_hits VALUES (job, clock_timestamp()) $$;
`

func main() {
	idle := flag.Duration("idle", time.Minute, "how long the idle measurements watch the agent")
	scaleDBs := flag.Int("scale-dbs", 30, "databases of the memory and connections measurement (2 sessions each; the server allows 100, and sessions of the earlier measurements may still be closing)")
	minutes := flag.Int("minutes", 3, "how many consecutive minutes each start-offset measurement fires")
	only := flag.String("only", "", "run only one part: offsets, fairness, idle or scale")
	sessions := flag.Int("sessions", 0, "the agent's session budget per server; 0 means its default, half the server's connections for ordinary roles")
	maxRuns := flag.Int("max-runs", 0, "runs at once per database; 0 means the agent's default")
	logFile := flag.String("log", "", "write the agent's log of the start-offset measurements, at level 5, to this file")
	scenarios := flag.String("scenarios", "50/1,500/1,1000/10", "the start-offset measurements to run, as JOBS/DATABASES")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole program (the agent and the measurements) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	agentOptions = agent.Options{Sessions: *sessions, MaxRuns: *maxRuns}
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "agentbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		logger := slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
		agentOptions.Logger = func(id, _ int) *slog.Logger { return logger.With("db", id) }
	}
	if err := run(*idle, *scaleDBs, *minutes, *only, *scenarios); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "agentbench:", err)
		os.Exit(1)
	}
}

// agentOptions are the agent's settings the flags choose; the measurements add their own.
var agentOptions agent.Options

// scenario is one start-offset measurement: jobs due at the same minutes, spread over databases.
type scenario struct {
	jobs, dbs int
	goal      float64 // p99 in ms
}

func run(idle time.Duration, scaleDBs, minutes int, only, scenarios string) error {
	ctx := context.Background()
	// A real server's settings: what a user runs the agent against.
	cluster, err := pgtest.StartWith(ctx, pgtest.Settings{Durable: true, MaxConnections: 100})
	if err != nil {
		return err
	}
	defer cluster.Close()
	budget := "the agent's default session budget"
	if agentOptions.Sessions > 0 {
		budget = fmt.Sprintf("a session budget of %d", agentOptions.Sessions)
	}
	if agentOptions.MaxRuns > 0 {
		budget += fmt.Sprintf(", %d runs at once per database", agentOptions.MaxRuns)
	}
	fmt.Println("cluster: fsync, synchronous_commit and full_page_writes on, max_connections 100; " + budget)
	if only == "" || only == "offsets" {
		if err := offsetScenarios(ctx, cluster, minutes, scenarios); err != nil {
			return err
		}
	}
	if only == "" || only == "fairness" {
		if err := fairness(ctx, cluster, minutes); err != nil {
			return err
		}
	}
	if only != "" && only != "idle" {
		if only == "scale" {
			return scale(ctx, cluster, scaleDBs)
		}
		return nil
	}

	dbs, err := createDatabases(ctx, cluster, "idle", 1, 0, "")
	if err != nil {
		return err
	}
	statements, err := idleStatements(ctx, cluster, dbs[0], idle, false)
	if err != nil {
		return err
	}
	verdict := "ok: goal 0"
	if statements > 0 {
		verdict = "MISSED: goal 0"
	}
	fmt.Printf("\nstatements the agent sent while idle with 100 jobs scheduled: %d in %s (%.1f per minute)  %s\n", statements, idle, float64(statements)/idle.Minutes(), verdict)
	statements, err = idleStatements(ctx, cluster, dbs[0], idle, true)
	if err != nil {
		return err
	}
	fmt.Printf("statements of a leader and a standby waiting behind it: %d in %s (%.1f per minute; bounded: a look every 2 s, an answer at most once a second)\n", statements, idle, float64(statements)/idle.Minutes())
	if err := dropDatabases(ctx, cluster, dbs); err != nil {
		return err
	}
	if only == "idle" {
		return nil
	}
	return scale(ctx, cluster, scaleDBs)
}

// offsetScenarios measures how late runs start after their minute, and checks that every fire has
// exactly one record.
func offsetScenarios(ctx context.Context, cluster *pgtest.Cluster, minutes int, chosen string) error {
	scenarios := []scenario{{50, 1, 20}, {500, 1, 100}, {1000, 10, 250}}
	var known []string
	for _, sc := range scenarios {
		known = append(known, fmt.Sprintf("%d/%d", sc.jobs, sc.dbs))
	}
	for _, c := range strings.Split(chosen, ",") {
		if !slices.Contains(known, c) {
			return fmt.Errorf("-scenarios: no measurement %q: choose among %s", c, strings.Join(known, ", "))
		}
	}
	fmt.Printf("\nstart offset of runs after their minute, from each job's own clock_timestamp(), over %d minutes:\n", minutes)
	fmt.Printf("  %-5s %-4s %8s %8s %8s %13s %-18s %-9s  %s\n", "jobs", "dbs", "p50 ms", "p99 ms", "max ms", "ran", "fires not 1 record", "sessions", "goal")
	for i, sc := range scenarios {
		if !slices.Contains(strings.Split(chosen, ","), known[i]) {
			continue
		}
		dbs, err := createDatabases(ctx, cluster, fmt.Sprintf("s%d", i), sc.dbs, 0, "")
		if err != nil {
			return err
		}
		r, err := startOffsets(ctx, cluster, dbs, sc.jobs, minutes)
		if err != nil {
			return err
		}
		p99 := percentile(r.offsets, 99)
		verdict := fmt.Sprintf("ok: p99 <= %.0f ms, none lost", sc.goal)
		if len(r.offsets) < r.expected || p99 > sc.goal || r.badRecords > 0 {
			verdict = fmt.Sprintf("MISSED: p99 <= %.0f ms, none lost", sc.goal)
		}
		fmt.Printf("  %-5d %-4d %8.1f %8.1f %8.1f %6d of %-4d %-18d %-9d  %s\n", sc.jobs, sc.dbs, percentile(r.offsets, 50), p99, percentile(r.offsets, 100), len(r.offsets), r.expected, r.badRecords, r.sessions, verdict)
		var byMinute []string
		for _, offsets := range r.byMinute {
			byMinute = append(byMinute, fmt.Sprintf("%.1f", percentile(offsets, 99)))
		}
		fmt.Printf("  %-5s %-4s p99 of each minute: %s ms\n", "", "", strings.Join(byMinute, ", "))
		if err := dropDatabases(ctx, cluster, dbs); err != nil {
			return err
		}
	}
	return nil
}

// dropDatabases drops the databases of a measurement, so that the next has the server to itself.
func dropDatabases(ctx context.Context, cluster *pgtest.Cluster, dbs []string) error {
	admin, err := pgx.Connect(ctx, cluster.DSN("postgres"))
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	for _, db := range dbs {
		if _, err := admin.Exec(ctx, "DROP DATABASE "+db+" WITH (FORCE)"); err != nil {
			return err
		}
	}
	return nil
}

// createDatabases creates n enabled databases with the bench functions and jobsPerDB jobs on
// schedule text each, by copying a template.
func createDatabases(ctx context.Context, cluster *pgtest.Cluster, prefix string, n, jobsPerDB int, schedule string) ([]string, error) {
	admin, err := pgx.Connect(ctx, cluster.DSN("postgres"))
	if err != nil {
		return nil, err
	}
	defer admin.Close(ctx)
	template := prefix + "_template"
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+template); err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, cluster.DSN(template))
	if err != nil {
		return nil, err
	}
	err = sqlschema.Install(ctx, conn)
	if err == nil {
		_, err = conn.Exec(ctx, benchFunctions)
	}
	if err == nil && jobsPerDB > 0 {
		_, err = conn.Exec(ctx, "SELECT pgjobs.pgj_create_schedule('bench', $1)", schedule)
		if err == nil {
			_, err = conn.Exec(ctx, `SELECT pgjobs.pgj_create_job('j' || i, format('bench_hit(%L)', 'j' || i), null, 'bench')
				FROM generate_series(1, $1) i`, jobsPerDB)
		}
	}
	conn.Close(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for i := range n {
		name := fmt.Sprintf("%s_%d", prefix, i)
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE "+template); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// shiftedClock is the real clock moved by an offset, so that a minute comes in seconds.
type shiftedClock struct{ offset time.Duration }

func (c shiftedClock) Now() time.Time                       { return time.Now().Add(c.offset) }
func (c shiftedClock) NewTimer(d time.Duration) agent.Timer { return agent.RealClock{}.NewTimer(d) }

// offsetResult is what startOffsets measures.
type offsetResult struct {
	offsets    []float64 // how late each run started, in ms; a run that never happened is missing
	expected   int       // the runs due
	badRecords int       // fires with no record or more than one in the run history
	byJob      map[string][]float64
	sessions   int         // sessions opened on the databases during the measured minutes
	byMinute   [][]float64 // the offsets of each measured minute
}

// sessionsOpened returns how many sessions the server has accepted on dbs since it started.
func sessionsOpened(ctx context.Context, cluster *pgtest.Cluster, dbs []string) (int, error) {
	conn, err := pgx.Connect(ctx, cluster.DSN("postgres"))
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int
	err = conn.QueryRow(ctx, "SELECT coalesce(sum(sessions), 0) FROM pg_stat_database WHERE datname = ANY($1)", dbs).Scan(&n)
	return n, err
}

// startOffsets runs `jobs` jobs spread over the databases, all due at the same minute, for
// `minutes` consecutive minutes, and measures how late each run started.
func startOffsets(ctx context.Context, cluster *pgtest.Cluster, dbs []string, jobs, minutes int) (offsetResult, error) {
	return startOffsetsAs(ctx, cluster, dbs, jobs, minutes, nil)
}

// startOffsetsAs is startOffsets with the jobs made by prepare, on each database's session as a
// superuser, given the schedule texts of the minutes; each role it sets makes its own jobs and
// schedules.
func startOffsetsAs(ctx context.Context, cluster *pgtest.Cluster, dbs []string, jobs, minutes int, prepare func(ctx context.Context, conn *pgx.Conn, schedules []string) error) (offsetResult, error) {
	var r offsetResult
	first := time.Now().Truncate(time.Minute).Add(30 * time.Minute).UTC()
	var schedules []string
	for m := range minutes {
		schedules = append(schedules, fmt.Sprintf("D %02d", first.Add(time.Duration(m)*time.Minute).Minute()))
	}
	for i, db := range dbs {
		conn, err := pgx.Connect(ctx, cluster.DSN(db))
		if err != nil {
			return r, err
		}
		if prepare != nil {
			err = prepare(ctx, conn, schedules)
		} else {
			_, err = conn.Exec(ctx, `SELECT pgjobs.pgj_create_job('j' || i, format('bench_hit(%L)', 'j' || i), null, null)
				FROM generate_series(1, $1) i WHERE (i - 1) % $2 = $3`, jobs, len(dbs), i)
			if err == nil {
				err = addSchedules(ctx, conn, "m", schedules)
			}
		}
		conn.Close(ctx)
		if err != nil {
			return r, err
		}
	}
	// The first minute comes 4 s after the agent starts, however long creating the jobs took.
	offset := first.Sub(time.Now().Add(4 * time.Second))
	opt := agentOptions
	opt.Clock, opt.Location, opt.Name = shiftedClock{offset}, time.UTC, "agentbench"
	m := agent.NewMaster(opt, slog.New(slog.DiscardHandler))
	var rows []agent.Database
	for i, db := range dbs {
		rows = append(rows, agent.Database{ID: i + 1, DSN: cluster.DSN(db)})
	}
	m.Apply(rows)
	realFirst := first.Add(-offset)
	// The sessions the server accepted on the databases from just before the first minute's
	// warming to the end: the sessions the agent opened for the runs, and moved between databases,
	// and any of the agents' own history sessions opened meanwhile.
	time.Sleep(time.Until(realFirst.Add(-3 * time.Second)))
	sessionsBefore, err := sessionsOpened(ctx, cluster, dbs)
	if err != nil {
		m.Stop(10 * time.Second)
		return r, err
	}
	// Look only after the last minute's runs had time to start: the bench's own sessions must not
	// compete with the runs.
	time.Sleep(time.Until(realFirst.Add(time.Duration(minutes-1)*time.Minute + 20*time.Second)))
	// Stopped first: an agent over the server's connection limit leaves no session for the bench.
	m.Stop(10 * time.Second)
	sessionsAfter, err := sessionsOpened(ctx, cluster, dbs)
	if err != nil {
		return r, err
	}
	r.sessions = sessionsAfter - sessionsBefore
	r.byJob = map[string][]float64{}
	r.byMinute = make([][]float64, minutes)
	for _, db := range dbs {
		conn, err := pgx.Connect(ctx, cluster.DSN(db))
		if err != nil {
			return r, err
		}
		rows, _ := conn.Query(ctx, "SELECT job, extract(epoch FROM at)::float8 FROM bench_hits")
		hits, err := pgx.CollectRows(rows, pgx.RowToStructByPos[struct {
			Job string
			At  float64
		}])
		if err == nil {
			// Every fire of the measured minutes: exactly one record (ok, error, missed or skipped).
			err = conn.QueryRow(ctx, `SELECT count(*) FROM pgjobs.pgj_job_ j
				CROSS JOIN generate_series($1::timestamptz, $2::timestamptz, interval '1 minute') m
				WHERE (SELECT count(*) FROM pgjobs.pgj_run_ r WHERE r.runjobid = j.jobid AND r.runscheduled = m) <> 1`,
				first, first.Add(time.Duration(minutes-1)*time.Minute)).Scan(&r.badRecords)
		}
		conn.Close(ctx)
		if err != nil {
			return r, err
		}
		for _, h := range hits {
			// Each run's offset after the minute it belongs to.
			sinceFirst := h.At - float64(realFirst.UnixMicro())/1e6
			minute := math.Floor((sinceFirst + 5) / 60) // a run up to 5 s early would be a clock step
			offset := (sinceFirst - minute*60) * 1000
			r.offsets = append(r.offsets, offset)
			r.byJob[h.Job] = append(r.byJob[h.Job], offset)
			if m := int(minute); m >= 0 && m < minutes {
				r.byMinute[m] = append(r.byMinute[m], offset)
			}
		}
	}
	r.expected = jobs * minutes
	return r, nil
}

// addSchedules makes the schedules, named prefix0, prefix1, ..., and adds them to every job of the
// session's role.
func addSchedules(ctx context.Context, conn *pgx.Conn, prefix string, schedules []string) error {
	for m, text := range schedules {
		name := fmt.Sprintf("%s%d", prefix, m)
		if _, err := conn.Exec(ctx, "SELECT pgjobs.pgj_create_schedule($1, $2)", name, text); err != nil {
			return err
		}
		for offset := 0; ; offset += 500 { // a transaction's locks are bounded
			tag, err := conn.Exec(ctx, `SELECT pgjobs.pgj_add_job_schedule(name, $1)
				FROM (SELECT name FROM pgjobs.pgj_jobs WHERE owner = current_user ORDER BY name OFFSET $2 LIMIT 500) j`, name, offset)
			if err != nil {
				return err
			}
			if tag.RowsAffected() < 500 {
				break
			}
		}
	}
	return nil
}

func percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return 0
	}
	sorted := append([]float64(nil), values...)
	sort.Float64s(sorted)
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}
