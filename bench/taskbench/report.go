package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"
)

// figure is one measured figure beside its goal.
type figure struct {
	name  string
	value float64
	unit  string
	// goal is the bound the value must meet, and atMost tells which way: a value <= goal
	// (latencies, losses) or >= goal (rates, ratios). NaN: printed without a goal.
	goal   float64
	atMost bool
	note   string // what the goal is relative to, how it was measured
}

// met tells whether the figure meets its goal (true when it has none).
func (f figure) met() bool {
	switch {
	case math.IsNaN(f.goal):
		return true
	case math.IsNaN(f.value):
		return false
	case f.atMost:
		return f.value <= f.goal
	default:
		return f.value >= f.goal
	}
}

// ratio is value / goal, for the column that says how far a figure is from its goal.
func (f figure) ratio() string {
	if math.IsNaN(f.goal) || f.goal == 0 || math.IsNaN(f.value) {
		return ""
	}
	return fmt.Sprintf("%.2f×", f.value/f.goal)
}

func (f figure) String() string {
	goal, verdict := "", ""
	if !math.IsNaN(f.goal) {
		op := "≥"
		if f.atMost {
			op = "≤"
		}
		goal = fmt.Sprintf("%s %s", op, number(f.goal))
		verdict = "met"
		if !f.met() {
			verdict = "MISSED"
		}
	}
	s := fmt.Sprintf("  %-52s %12s %-8s %-14s %-7s %s", f.name, number(f.value), f.unit, goal, f.ratio(), verdict)
	if f.note != "" {
		s += "  (" + f.note + ")"
	}
	return strings.TrimRight(s, " ")
}

// noGoal marks a figure printed for information.
var noGoal = math.NaN()

// number prints a figure with the precision its size needs.
func number(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) >= 1000:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// section prints a measurement's heading and figures as they come.
func section(w io.Writer, title string, figures ...figure) {
	fmt.Fprintf(w, "\n%s\n", title)
	for _, f := range figures {
		fmt.Fprintln(w, f)
	}
}

// percentile returns the p-th percentile (0..100) of ds, nearest rank; 0 when empty.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
