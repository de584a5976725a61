// Command ratio reads `go test -bench` output on stdin, passes it through, and prints each
// benchmark pair NAME/pgjobs and NAME/cron side by side with the ratio cron ÷ pgjobs, and checks
// the latency goals of the schedule package.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// goals are the most a pgjobs benchmark may take, in ns/op.
var goals = map[string]float64{
	"leap_day_from_non_leap_year": 1000,
	"past_one_off":                1000,
}

// notComparable explains pairs whose cron side does less work than pgjobs.
var notComparable = map[string]string{
	"interval_vs_every": "@every adds the delay to the time asked; pgjobs anchors at the agent's start",
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ratio:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	nsPerOp := map[string]map[string]float64{} // kind -> implementation -> ns/op
	scanner := bufio.NewScanner(in)
	for scanner.Scan() {
		line := scanner.Text()
		fmt.Fprintln(out, line)
		kind, impl, ns, ok := parseLine(line)
		if !ok {
			continue
		}
		if nsPerOp[kind] == nil {
			nsPerOp[kind] = map[string]float64{}
		}
		nsPerOp[kind][impl] = ns
	}
	if err := scanner.Err(); err != nil {
		return fmt.Errorf("read benchmark output: %w", err)
	}
	if len(nsPerOp) == 0 {
		return fmt.Errorf("no BenchmarkNext results in the input")
	}
	kinds := make([]string, 0, len(nsPerOp))
	for kind := range nsPerOp {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	fmt.Fprintf(out, "\n%-30s %12s %12s %9s  %s\n", "schedule kind", "pgjobs ns", "cron ns", "cron/pgj", "verdict")
	failed := 0
	for _, kind := range kinds {
		pgj, cron := nsPerOp[kind]["pgjobs"], nsPerOp[kind]["cron"]
		var verdicts []string
		ratio := "-"
		if cron > 0 && pgj > 0 {
			ratio = fmt.Sprintf("%.1fx", cron/pgj)
			switch why, skip := notComparable[kind]; {
			case skip:
				verdicts = append(verdicts, "not comparable: "+why)
			case pgj <= cron:
				verdicts = append(verdicts, "ok: at least as fast as cron")
			default:
				verdicts = append(verdicts, "SLOWER than cron")
				failed++
			}
		}
		if goal, ok := goals[kind]; ok {
			if pgj < goal {
				verdicts = append(verdicts, fmt.Sprintf("ok: under %.0f ns", goal))
			} else {
				verdicts = append(verdicts, fmt.Sprintf("OVER the %.0f ns goal", goal))
				failed++
			}
		}
		fmt.Fprintf(out, "%-30s %12s %12s %9s  %s\n", kind, show(pgj), show(cron), ratio, strings.Join(verdicts, "; "))
	}
	if failed > 0 {
		fmt.Fprintf(out, "%d goal(s) missed\n", failed)
	}
	return nil
}

// parseLine reads "BenchmarkNext/KIND/IMPL-2   123   45.6 ns/op ...".
func parseLine(line string) (kind, impl string, ns float64, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 4 || !strings.HasPrefix(fields[0], "BenchmarkNext/") {
		return "", "", 0, false
	}
	name := strings.TrimPrefix(fields[0], "BenchmarkNext/")
	if i := strings.LastIndexByte(name, '-'); i > 0 {
		name = name[:i] // the GOMAXPROCS suffix
	}
	kind, impl, found := strings.Cut(name, "/")
	if !found {
		return "", "", 0, false
	}
	for i := 2; i < len(fields); i++ {
		if fields[i] == "ns/op" {
			v, err := strconv.ParseFloat(fields[i-1], 64)
			return kind, impl, v, err == nil
		}
	}
	return "", "", 0, false
}

func show(ns float64) string {
	if ns == 0 {
		return "-"
	}
	return strconv.FormatFloat(ns, 'f', 1, 64)
}
