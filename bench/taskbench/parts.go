package main

import (
	"context"
	"fmt"
	"os"
)

// reportBurnDown measures and prints the burn-down of the agent, of the ceiling loop on as many
// sessions as the agent used, and of River on as many.
func (e *env) reportBurnDown(ctx context.Context, n int, river bool) error {
	b, err := e.measureBurnDown(ctx, n)
	if err != nil {
		return err
	}
	ceiling, err := e.measureCeiling(ctx, n, b.peakConns)
	if err != nil {
		return err
	}
	ceilingRate := float64(n) / ceiling.Seconds()
	figures := []figure{
		{name: fmt.Sprintf("agent: %d no-op tasks burnt down", n), value: b.rate(), unit: "tasks/s", goal: noGoal,
			note: fmt.Sprintf("%.1f s, %d sessions at most", b.took.Seconds(), b.peakConns)},
		{name: "ceiling loop (100 rows a transaction, same sessions)", value: ceilingRate, unit: "rows/s", goal: noGoal, note: fmt.Sprintf("%.1f s", ceiling.Seconds())},
		{name: "agent / ceiling", value: b.rate() / ceilingRate, unit: "", goal: 0.8},
	}
	if river {
		r, err := e.measureRiver(ctx, n, b.peakConns)
		if err != nil {
			fmt.Fprintln(os.Stderr, "taskbench: River's burn-down:", err)
		} else {
			figures = append(figures,
				figure{name: "River no-op burn-down (same sessions)", value: r, unit: "jobs/s", goal: noGoal},
				figure{name: "agent / River", value: b.rate() / r, unit: "", goal: 1.3})
		}
	}
	figures = append(figures,
		figure{name: "statements per task (server side, amortised)", value: b.statements, unit: "", goal: noGoal},
		figure{name: "WAL per task", value: b.walBytes, unit: "bytes", goal: noGoal})
	section(os.Stdout, "Burn-down (issue 13, 1 and 6)", figures...)
	return nil
}
