package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCtrlCStopsTheDemoCleanly: the demo, started as a terminal starts it, stopped with a Ctrl-C
// (SIGINT to its whole process group): the agent stops softly, the run history is printed, the
// cluster is removed, and the demo exits 0.
func TestCtrlCStopsTheDemoCleanly(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster and the built programs")
	}
	t.Parallel()
	dir := t.TempDir()
	for _, program := range []string{"pgjobs", "pgjobsagent"} {
		if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "bin", program), "../../cmd/"+program).CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", program, err, out)
		}
	}
	if out, err := exec.Command("go", "build", "-o", filepath.Join(dir, "demo"), ".").CombinedOutput(); err != nil {
		t.Fatalf("build the demo: %v\n%s", err, out)
	}
	demo := exec.Command(filepath.Join(dir, "demo"), "-bin", filepath.Join(dir, "bin"))
	demo.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a foreground group of its own, as in a terminal
	output, pw, err := os.Pipe()                           // standard output and error together, as a terminal shows them
	if err != nil {
		t.Fatal(err)
	}
	demo.Stdout, demo.Stderr = pw, pw
	if err := demo.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	var out strings.Builder
	var mu sync.Mutex
	started := make(chan struct{})
	read := make(chan struct{})
	go func() {
		defer close(read)
		once := sync.Once{}
		helloDone, taskDone := false, false
		lines := bufio.NewScanner(output)
		for lines.Scan() {
			mu.Lock()
			out.WriteString(lines.Text() + "\n")
			mu.Unlock()
			if strings.Contains(lines.Text(), `job "Hello" of `) && strings.HasSuffix(lines.Text(), " done") {
				helloDone = true
			}
			if strings.Contains(lines.Text(), "task 1 done") {
				taskDone = true
			}
			if helloDone && taskDone {
				once.Do(func() { close(started) })
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		_ = syscall.Kill(-demo.Process.Pid, syscall.SIGKILL)
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("the demo's agent ran no job:\n%s", out.String())
	}
	if err := syscall.Kill(-demo.Process.Pid, syscall.SIGINT); err != nil { // what Ctrl-C sends
		t.Fatal(err)
	}
	<-read
	err = demo.Wait()
	mu.Lock()
	defer mu.Unlock()
	text := out.String()
	if err != nil {
		t.Fatalf("the demo ended with %v:\n%s", err, text)
	}
	for _, want := range []string{"pgjobsagent: stopped on interrupt", "== the run history", "Hello    ok", "== the tasks", "1 DONE attempt 1  who\tanswer | postgres\t42", "== removing the cluster"} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the demo's output:\n%s", want, text)
		}
	}
	if strings.Contains(text, "second signal") {
		t.Errorf("the agent got Ctrl-C twice:\n%s", text)
	}
}
