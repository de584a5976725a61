package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"time"
)

const (
	riverModule   = "github.com/riverqueue/river"
	riverFallback = "v0.51.2" // the version pinned in go.mod
)

// result is the -json output; the fetch fields appear only when River's defaults were overridden.
type result struct {
	System              string  `json:"system"`
	Version             string  `json:"version"`
	Jobs                int     `json:"jobs"`
	Seconds             float64 `json:"seconds"`
	PerSecond           float64 `json:"per_second"`
	Conns               int     `json:"conns"`
	Workers             int     `json:"workers"`
	InsertSeconds       float64 `json:"insert_seconds"`
	FetchCooldownMS     float64 `json:"fetch_cooldown_ms,omitempty"`
	FetchPollIntervalMS float64 `json:"fetch_poll_interval_ms,omitempty"`
}

func newResult(o options, insertTime, workTime time.Duration) result {
	return result{
		System: "river", Version: riverVersion(), Jobs: o.jobs, Conns: o.conns, Workers: o.workers,
		Seconds:             round3(workTime.Seconds()),
		PerSecond:           math.Round(float64(o.jobs) / workTime.Seconds()),
		InsertSeconds:       round3(insertTime.Seconds()),
		FetchCooldownMS:     float64(o.fetchCooldown.Microseconds()) / 1000,
		FetchPollIntervalMS: float64(o.fetchPI.Microseconds()) / 1000,
	}
}

func report(o options, r result) error {
	if o.json {
		return json.NewEncoder(os.Stdout).Encode(r)
	}
	tuning := "" // only when River's fetch defaults were overridden
	if o.fetchCooldown > 0 || o.fetchPI > 0 {
		tuning = fmt.Sprintf("; fetch cooldown %s, poll interval %s", o.fetchCooldown, o.fetchPI)
	}
	_, err := fmt.Printf("river %s: %d no-op jobs worked in %.1f s: %s jobs/s (%d connections, %d workers; insert took %.1f s%s)\n",
		r.Version, r.Jobs, r.Seconds, thousands(int64(r.PerSecond)), r.Conns, r.Workers, r.InsertSeconds, tuning)
	return err
}

func riverVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == riverModule {
				return dep.Version
			}
		}
	}
	return riverFallback
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
