package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pgjobs/pgjobs/internal/pgtest"
)

var (
	// binary is the pgjobs program built for this test run.
	binary string
	// cluster is the PostgreSQL server the admin commands are tested on.
	cluster *pgtest.Cluster
)

func TestMain(m *testing.M) {
	useLongHelpAndVersionFlags()
	os.Exit(buildAndRun(m))
}

func buildAndRun(m *testing.M) int {
	dir, err := os.MkdirTemp("", "pgjobs-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "pgjobs")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build pgjobs: %v\n%s", err, out)
		return 1
	}
	return pgtest.Main(m, &cluster)
}

// result is what one run of pgjobs printed and returned.
type result struct {
	stdout, stderr string
	code           int
}

// runBinary runs the built pgjobs with args and extra environment variables.
func runBinary(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exitErr, ok := err.(*exec.ExitError); ok {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatalf("run pgjobs %v: %v", args, err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// runInProcess runs pgjobs through run, as main does.
// inProcess serializes runInProcess.
var inProcess sync.Mutex

func runInProcess(args ...string) result {
	// One at a time: urfave/cli applies its global help and version flags (cli.HelpFlag) to each
	// app it runs, writing them, so parallel tests running the CLI in process would race.
	inProcess.Lock()
	defer inProcess.Unlock()
	var stdout, stderr bytes.Buffer
	code := run(append([]string{"pgjobs"}, args...), &stdout, &stderr)
	return result{stdout.String(), stderr.String(), code}
}
