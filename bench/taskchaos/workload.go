package main

// The tasks: a mix of short and long inputs, a few that fail on purpose and a few planned a day
// ahead, spread over groups of max 0..3; inserted by an ordinary login role.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// kind is what a task does and how it should end.
type kind int

const (
	short   kind = iota // a few ms of work: DONE
	long                // pg_sleep 0.05..0.5 s: DONE
	failing             // divides by zero after recording its effect: FAIL, the effect rolled back
	ahead               // planned a day ahead: still PLAN at the end
)

func (k kind) String() string {
	return [...]string{"short", "long", "failing", "planned ahead"}[k]
}

// taskSpec is one task inserted; k is its unique key, in the task's data and in its effect.
type taskSpec struct {
	k     int
	group string
	max   int
	kind  kind
	sleep float64 // seconds
}

// input is the task's SQL: the work, then the effect row, in the one transaction of the input.
func (t taskSpec) input() string {
	effect := fmt.Sprintf("INSERT INTO chaos_effect (k, grp, started, stopped, pid) VALUES (%d, '%s', now(), clock_timestamp(), pg_backend_pid())", t.k, t.group)
	text := fmt.Sprintf("SELECT pg_sleep(%.3f); %s", t.sleep, effect)
	if t.kind == failing {
		text += "; SELECT 1/0"
	}
	return text
}

// mix draws the tasks, the same for the same seed, and remembers every task it gave.
type mix struct {
	rng    *rand.Rand
	groups int
	specs  []taskSpec // specs[k-1] is task k
}

func newMix(seed int64, groups int) *mix {
	return &mix{rng: rand.New(rand.NewPCG(uint64(seed), 0x7a5c)), groups: groups}
}

// groupMax is the max of group g: 0, 1, 2, 3, 0, ...
func groupMax(g int) int { return g % 4 }

// next draws n more tasks: 1 % failing, 0.5 % planned ahead, a quarter of the rest long.
func (m *mix) next(n int) []taskSpec {
	out := make([]taskSpec, 0, n)
	for range n {
		k := len(m.specs) + 1
		g := m.rng.IntN(m.groups)
		t := taskSpec{k: k, group: fmt.Sprintf("g%02d", g), max: groupMax(g)}
		switch {
		case k%100 == 37:
			t.kind, t.sleep = failing, 0.002
		case k%200 == 111:
			t.kind, t.sleep = ahead, 0.001
		case m.rng.Float64() < 0.25:
			t.kind, t.sleep = long, 0.05+0.45*m.rng.Float64()
		default:
			t.kind, t.sleep = short, 0.001+0.004*m.rng.Float64()
		}
		m.specs = append(m.specs, t)
		out = append(out, t)
	}
	return out
}

// issued returns how many tasks of each kind were inserted, and the total.
func (m *mix) issued() taskCounts {
	var c taskCounts
	for _, t := range m.specs {
		c.byKind[t.kind]++
	}
	c.total = len(m.specs)
	return c
}

type taskCounts struct {
	total  int
	byKind [4]int
}

// spec returns the task of key k, false when there is none.
func (m *mix) spec(k int) (taskSpec, bool) {
	if k < 1 || k > len(m.specs) {
		return taskSpec{}, false
	}
	return m.specs[k-1], true
}

// insertTasks inserts the tasks as the role, 1,000 a statement. They keep their rows (delete
// off) so that every end can be checked.
func insertTasks(ctx context.Context, e *env, specs []taskSpec) error {
	conn, err := e.connectAsRole(ctx)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for len(specs) > 0 {
		batch := specs[:min(1000, len(specs))]
		specs = specs[len(batch):]
		groups, maxes, inputs, keys, later := make([]string, len(batch)), make([]int32, len(batch)), make([]string, len(batch)), make([]int32, len(batch)), make([]bool, len(batch))
		for i, t := range batch {
			groups[i], maxes[i], inputs[i], keys[i], later[i] = t.group, int32(t.max), t.input(), int32(t.k), t.kind == ahead
		}
		if _, err := conn.Exec(ctx, `INSERT INTO task ("group", max, input, data, "delete", plan)
			SELECT g, m, i, k::text, false, CASE WHEN a THEN now() + interval '1 day' ELSE now() END
			FROM unnest($1::text[], $2::int[], $3::text[], $4::int[], $5::bool[]) AS u(g, m, i, k, a)`,
			groups, maxes, inputs, keys, later); err != nil {
			return fmt.Errorf("insert tasks as %s: %w", e.role, err)
		}
	}
	return nil
}

// topUp inserts more tasks when fewer are ready than the agents run in one fault's window at the
// baseline rate (and 5 s more), so that each recovery is measured on a full queue. It returns how
// many were ready before.
func topUp(ctx context.Context, e *env, m *mix, rate float64, window time.Duration, told func(int)) (int, error) {
	var ready int
	if err := retry(ctx, func(ctx context.Context) error {
		return e.pool.QueryRow(ctx, "SELECT count(*) FROM pgjobs.task WHERE state = 'PLAN' AND plan <= now()").Scan(&ready)
	}); err != nil {
		return 0, fmt.Errorf("count the ready tasks: %w", err)
	}
	need := int(rate * (window + 5*time.Second).Seconds())
	if ready >= need {
		return ready, nil
	}
	if err := insertTasks(ctx, e, m.next(need-ready)); err != nil {
		return ready, err
	}
	told(need - ready)
	return ready, nil
}
