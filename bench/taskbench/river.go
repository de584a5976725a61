package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
)

// River runs with the settings of River's own benchmark (cmd/river/riverbench: a fetch cooldown
// of 2 ms, a poll interval of 20 ms, 2,000 workers): its defaults fetch at most 100 jobs each
// 100 ms, about 1,000 jobs/s, which would not be River's speed but a setting's.
var riverArgs = []string{"-fetch-cooldown", "2ms", "-fetch-poll-interval", "20ms", "-workers", "2000"}

// measureRiver runs River's no-op burn-down of n jobs (bench/river, a module of its own so that
// the product's go.mod stays free of River) in a new database on conns sessions, and returns its
// jobs/s.
func (e *env) measureRiver(ctx context.Context, n, conns int) (float64, error) {
	db, err := e.newDatabase(ctx, "river")
	if err != nil {
		return 0, err
	}
	args := append([]string{"-C", "bench/river", "run", ".", "-dsn", e.cluster.DSN(db), "-jobs", strconv.Itoa(n),
		"-conns", strconv.Itoa(conns), "-json"}, riverArgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("go %v: %w\n%s", args, err, stderr.String())
	}
	var result struct {
		PerSecond float64 `json:"per_second"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &result); err != nil {
		return 0, fmt.Errorf("the output of River's burn-down %q: %w", stdout.String(), err)
	}
	return result.PerSecond, nil
}
