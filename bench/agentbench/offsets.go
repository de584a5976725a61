package main

// The start-offset measurements: how late runs start after their minute, from each job's own
// clock_timestamp(), with the figures printed beside their goals.

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// scenario is one start-offset measurement: jobs due at the same minutes, spread over databases.
type scenario struct {
	jobs, dbs int
	goal      float64 // p99 in ms
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
		var cpu []string
		for _, w := range r.cpu {
			if w.err != nil {
				return w.err
			}
			cpu = append(cpu, fmt.Sprintf("%.0f/%.0f", float64(w.agent)/float64(time.Millisecond), float64(w.machine)/float64(time.Millisecond)))
		}
		fmt.Printf("  %-5s %-4s CPU of the agent/of the machine from %s before to %s after each minute: %s ms (the machine has %d ms)\n",
			"", "", cpuBefore, cpuAfter, strings.Join(cpu, ", "), int(runtime.NumCPU())*int((cpuBefore+cpuAfter)/time.Millisecond))
		var floorAll []float64
		var byBurst, floorCPU, over []string
		for m, b := range r.floor {
			floorAll = append(floorAll, b.offsets...)
			p99 := percentile(b.offsets, 99)
			byBurst = append(byBurst, fmt.Sprintf("%.1f", p99))
			if b.cpu.err != nil {
				return b.cpu.err
			}
			cpu := fmt.Sprintf("%.0f/%.0f", float64(b.cpu.agent)/float64(time.Millisecond), float64(b.cpu.machine)/float64(time.Millisecond))
			if b.window > cpuBefore+cpuAfter+10*time.Millisecond { // a burst that outlasted the window
				cpu += fmt.Sprintf(" (in %d ms)", b.window.Milliseconds())
			}
			floorCPU = append(floorCPU, cpu)
			over = append(over, fmt.Sprintf("%+.1f", percentile(r.byMinute[m], 99)-p99))
		}
		fmt.Printf("  %-5s %-4s the floor, %s after each minute: the same runs (guard, call, reset) sent at once by a bare client, %d sessions a database: p50 %.1f, p99 %.1f (%s), max %.1f ms\n",
			"", "", floorAfter, r.floorSessions, percentile(floorAll, 50), percentile(floorAll, 99), strings.Join(byBurst, ", "), percentile(floorAll, 100))
		fmt.Printf("  %-5s %-4s CPU of this process (the bare client, the agent idle)/of the machine in the same window around each burst: %s ms; the agent's p99 over the floor's, each minute: %s ms\n",
			"", "", strings.Join(floorCPU, ", "), strings.Join(over, ", "))
		if sc.dbs > 1 {
			var spread []string
			for _, last := range r.lastByDB {
				spread = append(spread, fmt.Sprintf("%.0f-%.0f", percentile(last, 0), percentile(last, 100)))
			}
			fmt.Printf("  %-5s %-4s last run of the earliest and latest database, each minute: %s ms\n", "", "", strings.Join(spread, ", "))
		}
		if err := dropDatabases(ctx, cluster, dbs); err != nil {
			return err
		}
	}
	return nil
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
	// lastByDB is, for each minute, the offset of the last run of each database: how evenly the
	// databases shared the sessions.
	lastByDB [][]float64
	cpu      []cpuWindow // the CPU time spent around each measured minute
	// floor is the floor's burst after each measured minute (floor.go); none when not asked for.
	floor         []floorBurstResult
	floorSessions int // the floor's sessions in each database
}

// The window around each minute whose CPU time is measured: the runs of the minute start in it.
const cpuBefore, cpuAfter = 50 * time.Millisecond, 500 * time.Millisecond

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
	return startOffsetsAs(ctx, cluster, dbs, jobs, minutes, nil, true)
}

// startOffsetsAs is startOffsets with the jobs made by prepare, on each database's session as a
// superuser, given the schedule texts of the minutes; each role it sets makes its own jobs and
// schedules. withFloor sends the floor's burst after each minute (the jobs must be the bench
// role's).
func startOffsetsAs(ctx context.Context, cluster *pgtest.Cluster, dbs []string, jobs, minutes int, prepare func(ctx context.Context, conn *pgx.Conn, schedules []string) error, withFloor bool) (offsetResult, error) {
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
	var f *floor
	if withFloor {
		// Opened before the sessions accepted are counted, and idle through the agent's minutes.
		var err error
		if f, err = openFloor(ctx, cluster, dbs); err != nil {
			return r, err
		}
		defer f.close(ctx)
		r.floorSessions = f.sessions
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
	cpu := watchCPU(realFirst, minutes, cpuBefore, cpuAfter)
	// The sessions the server accepted on the databases from just before the first minute's
	// warming to the end: the sessions the agent opened for the runs, and moved between databases,
	// and any of the agents' own history sessions opened meanwhile.
	time.Sleep(time.Until(realFirst.Add(-3 * time.Second)))
	sessionsBefore, err := sessionsOpened(ctx, cluster, dbs)
	if err != nil {
		m.Stop(10 * time.Second)
		return r, err
	}
	for minute := range minutes {
		if f == nil {
			break
		}
		at := realFirst.Add(time.Duration(minute)*time.Minute + floorAfter)
		if time.Until(at) < -time.Second {
			m.Stop(10 * time.Second)
			return r, fmt.Errorf("floor: the burst after minute %d could not start on time: the one before ran %s late", minute+1, -time.Until(at))
		}
		time.Sleep(time.Until(at))
		// Done 5 s before the next minute at the latest: the agent warms its sessions 2 s before.
		b, err := f.burst(ctx, realFirst.Add(time.Duration(minute+1)*time.Minute-5*time.Second))
		if err != nil {
			m.Stop(10 * time.Second)
			return r, err
		}
		r.floor = append(r.floor, b)
	}
	// Look only after the last minute's runs had time to start: the bench's own sessions must not
	// compete with the runs (with the floor, its last burst came later still).
	time.Sleep(time.Until(realFirst.Add(time.Duration(minutes-1)*time.Minute + 20*time.Second)))
	// Stopped first: an agent over the server's connection limit leaves no session for the bench.
	m.Stop(10 * time.Second)
	sessionsAfter, err := sessionsOpened(ctx, cluster, dbs)
	if err != nil {
		return r, err
	}
	r.sessions = sessionsAfter - sessionsBefore
	r.cpu = <-cpu
	r.byJob = map[string][]float64{}
	r.byMinute = make([][]float64, minutes)
	r.lastByDB = make([][]float64, minutes)
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
		last := make([]float64, minutes)
		for _, h := range hits {
			// Each run's offset after the minute it belongs to.
			sinceFirst := h.At - float64(realFirst.UnixMicro())/1e6
			minute := math.Floor((sinceFirst + 5) / 60) // a run up to 5 s early would be a clock step
			offset := (sinceFirst - minute*60) * 1000
			r.offsets = append(r.offsets, offset)
			r.byJob[h.Job] = append(r.byJob[h.Job], offset)
			if m := int(minute); m >= 0 && m < minutes {
				r.byMinute[m] = append(r.byMinute[m], offset)
				last[m] = max(last[m], offset)
			}
		}
		for m := range minutes {
			r.lastByDB[m] = append(r.lastByDB[m], last[m])
		}
	}
	r.expected = jobs * minutes
	return r, nil
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
