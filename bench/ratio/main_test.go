package main

import (
	"strings"
	"testing"
)

func TestParseLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, line, kind, impl string
		ns                     float64
		ok                     bool
	}{
		{"pgjobs", "BenchmarkNext/daily/pgjobs-2   6782002   177.6 ns/op   0 B/op", "daily", "pgjobs", 177.6, true},
		{"cron without suffix", "BenchmarkNext/leap/cron 100 19484 ns/op", "leap", "cron", 19484, true},
		{"other benchmark", "BenchmarkParse-2 27238 42137 ns/op", "", "", 0, false},
		{"not a benchmark", "ok  	github.com/pgjobs/pgjobs/schedule	23.029s", "", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind, impl, ns, ok := parseLine(tt.line)
			if kind != tt.kind || impl != tt.impl || ns != tt.ns || ok != tt.ok {
				t.Fatalf("parseLine(%q) = %q %q %v %v", tt.line, kind, impl, ns, ok)
			}
		})
	}
}

func TestRunReportsSlowerAndGoals(t *testing.T) {
	t.Parallel()
	in := "BenchmarkNext/daily/pgjobs-2 1 300 ns/op\nBenchmarkNext/daily/cron-2 1 200 ns/op\n" +
		"BenchmarkNext/past_one_off/pgjobs-2 1 100 ns/op\n"
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SLOWER than cron", "ok: under 1000 ns", "1 goal(s) missed"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := run(strings.NewReader("nothing\n"), &out); err == nil {
		t.Error("run without results: no error")
	}
}
