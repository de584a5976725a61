package main

// The checks after the run: how each task ended against what it was meant to do, its effects
// (none twice, none lost, none of a failed run), and the runs at once in each group.

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// taskRow is a task as the table has it at the end.
type taskRow struct {
	id          int64
	k           int
	state       string
	attempt     int
	err         string
	start, stop *time.Time
	group       string
	max         int
}

// effect is one committed run of a task's input.
type effect struct {
	k                int
	group            string
	started, stopped time.Time
	pid              int32
}

// sessionLost is an error of a run whose session a fault ended.
var sessionLost = regexp.MustCompile(`SQLSTATE:  (57P0[1-3]|08[0-9A-Z]{3})|session ended|terminating connection`)

// check reads the tasks and effects and computes the figures other than the throughput.
func check(ctx context.Context, e *env, m *mix, faults []*fault, lines []logLine, exits map[int]time.Time) (*figures, error) {
	tasks, err := readTasks(ctx, e)
	if err != nil {
		return nil, err
	}
	effects, err := readEffects(ctx, e)
	if err != nil {
		return nil, err
	}
	fig := &figures{states: map[string]int{}, faultFails: map[string]int{}, faults: faults}
	fig.loggedResets, fig.loggedAdopted = loggedResets(lines)
	inFlight := func(a attemptKey) bool {
		for _, f := range faults {
			if f.caught(a) {
				return true
			}
		}
		return false
	}
	byKey := map[int][]effect{}
	for _, ef := range effects {
		byKey[ef.k] = append(byKey[ef.k], ef)
	}
	seen := map[int]bool{}
	for _, t := range tasks {
		seen[t.k] = true
		fig.states[t.state]++
		spec, ok := m.spec(t.k)
		runs := byKey[t.k]
		switch {
		case !ok:
			fig.unexpected.add("task %d: key %d was never inserted", t.id, t.k)
		case spec.kind == ahead:
			if t.state == "PLAN" && t.attempt == 0 {
				fig.ended.ahead++
			} else {
				fig.unexpected.add("task %d (planned a day ahead): %s after %d attempts", t.id, t.state, t.attempt)
			}
		case t.state == "FAIL" && spec.kind == failing && strings.Contains(t.err, "division by zero"):
			fig.ended.failing++
		case t.state == "FAIL" && sessionLost.MatchString(t.err) && inFlight(attemptKey{t.id, t.attempt}):
			fig.ended.byFault++
			fig.faultFails[firstLine(t.err)]++
			if len(runs) > 0 && spec.kind != failing {
				fig.failedApplied.add("task %d (k=%d) FAIL (%s) though %d run(s) committed its effect", t.id, t.k, firstLine(t.err), len(runs))
			}
		case t.state == "DONE" && spec.kind != failing:
			fig.ended.done++
			if len(runs) == 0 {
				fig.lost.add("task %d (k=%d) DONE without its effect", t.id, t.k)
			}
		default:
			fig.unexpected.add("task %d (k=%d, %s): %s after %d attempts: %s", t.id, t.k, spec.kind, t.state, t.attempt, firstLine(t.err))
		}
		if ok && spec.kind == failing && len(runs) > 0 {
			fig.failedApplied.add("task %d (k=%d) divides by zero, yet %d effect(s) committed", t.id, t.k, len(runs))
		}
		if len(runs) > 1 {
			fig.dupRows += len(runs) - 1
			if t.attempt < 2 {
				fig.dupNotRerun++
			}
			fig.dup.add("%s", describeDuplicate(t, runs, faults, lines))
		}
	}
	for _, spec := range m.specs {
		if !seen[spec.k] {
			fig.unexpected.add("k=%d (%s): its task row is gone", spec.k, spec.kind)
		}
	}
	fig.overEffects = overLimit(effectSpans(effects))
	fig.overRows = overLimit(rowSpans(tasks))
	fig.overLogs = overLimit(logSpans(lines, tasks, exits))
	fig.reruns = matchReruns(tasks, faults, lines)
	return fig, nil
}

func readTasks(ctx context.Context, e *env) ([]taskRow, error) {
	var tasks []taskRow
	err := retry(ctx, func(ctx context.Context) error {
		rows, err := e.pool.Query(ctx, `SELECT id, data, state::text, attempt, coalesce(error, ''), start, stop, "group", max
			FROM pgjobs.task ORDER BY id`)
		if err != nil {
			return err
		}
		tasks = tasks[:0]
		var t taskRow
		var data string
		_, err = pgx.ForEachRow(rows, []any{&t.id, &data, &t.state, &t.attempt, &t.err, &t.start, &t.stop, &t.group, &t.max}, func() error {
			t.k, _ = strconv.Atoi(data)
			tasks = append(tasks, t)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the tasks: %w", err)
	}
	return tasks, nil
}

func readEffects(ctx context.Context, e *env) ([]effect, error) {
	var effects []effect
	err := retry(ctx, func(ctx context.Context) error {
		rows, err := e.pool.Query(ctx, "SELECT k, grp, started, stopped, pid FROM chaos_effect ORDER BY k, started")
		if err != nil {
			return err
		}
		effects = effects[:0]
		var ef effect
		_, err = pgx.ForEachRow(rows, []any{&ef.k, &ef.group, &ef.started, &ef.stopped, &ef.pid}, func() error {
			effects = append(effects, ef)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the effects: %w", err)
	}
	return effects, nil
}

// describeDuplicate tells a task whose effect was applied twice: its runs, the faults just
// before them, and what the agents logged about it.
func describeDuplicate(t taskRow, runs []effect, faults []*fault, lines []logLine) string {
	var b strings.Builder
	fmt.Fprintf(&b, "task %d (k=%d, group %s max %d) %s after %d attempts, %d effects:", t.id, t.k, t.group, t.max, t.state, t.attempt, len(runs))
	for _, r := range runs {
		fmt.Fprintf(&b, "\n      run on backend %d %s..%s", r.pid, r.started.Format("15:04:05.000"), r.stopped.Format("15:04:05.000"))
	}
	for _, f := range faults {
		if f.at.After(runs[0].started.Add(-5*time.Second)) && f.at.Before(runs[len(runs)-1].stopped) {
			fmt.Fprintf(&b, "\n      fault at %s: %s", f.at.Format("15:04:05.000"), f.name)
		}
	}
	for _, l := range taskLines(lines, t.id) {
		fmt.Fprintf(&b, "\n      %s", l)
	}
	return b.String()
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
