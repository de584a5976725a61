package main

// The agent processes: started from the built binary on one configuration, each logging to a
// directory of its own, found active from the leader lease, killed and replaced.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// agentID is the database's row in the agents' configuration: its log folder is DIR/1.
const agentID = 1

// agentProc is one pgjobsagent process.
type agentProc struct {
	n      int // 1 for the first started, 2 for the next, ...
	cmd    *exec.Cmd
	logDir string
	done   chan struct{} // closed once the process has exited
	exited time.Time     // when it exited, set before done is closed
}

// fleet is every agent process the run started.
type fleet struct {
	bin, conf, logRoot string
	procs              []*agentProc
}

// newFleet writes the agents' configuration: the one database at log level 2 (each task's start
// and end), the master log at level 1.
func newFleet(bin string, e *env, work, logRoot string) (*fleet, error) {
	conf := filepath.Join(work, "pgjobs.conf")
	text := fmt.Sprintf("system=1.00\nmaster=1\n%d=%s|%d|%s|2|%s|none\n", agentID, e.cluster.Host(), e.cluster.Port(), database, e.cluster.User())
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, fmt.Errorf("write the agents' configuration: %w", err)
	}
	if err := os.MkdirAll(logRoot, 0o755); err != nil {
		return nil, fmt.Errorf("make the log directory: %w", err)
	}
	return &fleet{bin: bin, conf: conf, logRoot: logRoot}, nil
}

// start starts another agent. It runs in a process group of its own (a Ctrl-C reaches this
// program, which stops it) and is killed if this program dies.
func (f *fleet) start() (*agentProc, error) {
	p := &agentProc{n: len(f.procs) + 1, done: make(chan struct{})}
	p.logDir = filepath.Join(f.logRoot, "agent"+strconv.Itoa(p.n))
	if err := os.MkdirAll(p.logDir, 0o755); err != nil {
		return nil, fmt.Errorf("agent %d: %w", p.n, err)
	}
	stderr, err := os.Create(filepath.Join(p.logDir, "stderr.txt"))
	if err != nil {
		return nil, fmt.Errorf("agent %d: %w", p.n, err)
	}
	p.cmd = exec.Command(f.bin, "--config", f.conf, "--log-dir", p.logDir, "--grace", "2s")
	p.cmd.Stdout, p.cmd.Stderr = stderr, stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		stderr.Close()
		return nil, fmt.Errorf("start agent %d: %w", p.n, err)
	}
	go func() {
		_ = p.cmd.Wait()
		p.exited = time.Now()
		stderr.Close()
		close(p.done)
	}()
	f.procs = append(f.procs, p)
	return p, nil
}

func (p *agentProc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

func (p *agentProc) String() string { return fmt.Sprintf("agent %d (pid %d)", p.n, p.cmd.Process.Pid) }

// kill sends SIGKILL and waits for the exit.
func (p *agentProc) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks for a soft stop, and kills the agent if it has not stopped within 10 s.
func (p *agentProc) stop() {
	if !p.alive() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.kill()
	}
}

// running returns the agents alive.
func (f *fleet) running() []*agentProc {
	var alive []*agentProc
	for _, p := range f.procs {
		if p.alive() {
			alive = append(alive, p)
		}
	}
	return alive
}

// exits returns when each agent exited (now for one still alive), by its number.
func (f *fleet) exits() map[int]time.Time {
	out := map[int]time.Time{}
	for _, p := range f.procs {
		out[p.n] = time.Now()
		if !p.alive() {
			out[p.n] = p.exited
		}
	}
	return out
}

// stopAll stops every agent alive, all at once.
func (f *fleet) stopAll() {
	alive := f.running()
	for _, p := range alive {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, p := range alive {
		p.stop()
	}
}

var agentPID = regexp.MustCompile(`pid (\d+)$`)

// active returns the agent that holds the leader lease with a live session, nil when none of
// this run's agents does. The lease names the agent "host pid N" and its session.
func (f *fleet) active(ctx context.Context, pool *pgxpool.Pool) (*agentProc, error) {
	var name *string
	var alive bool
	err := pool.QueryRow(ctx, `SELECT l.agent, EXISTS (SELECT FROM pg_stat_activity a
		WHERE a.pid = l.pid AND a.backend_start = l.backend_start) FROM pgjobs.pgj_leader_ l`).Scan(&name, &alive)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && (name == nil || !alive)) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the leader lease: %w", err)
	}
	m := agentPID.FindStringSubmatch(*name)
	if m == nil {
		return nil, fmt.Errorf("the leader lease names %q, not an agent process", *name)
	}
	pid, _ := strconv.Atoi(m[1])
	for _, p := range f.running() {
		if p.cmd.Process.Pid == pid {
			return p, nil
		}
	}
	return nil, nil
}

// waitPair waits up to 30 s for two agents alive, one leading and the other standing by (its
// last word on the lead, in its log, is that it stands by).
func (f *fleet) waitPair(ctx context.Context, pool *pgxpool.Pool) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		lead, err := f.active(ctx, pool)
		if err != nil && ctx.Err() != nil {
			return err
		}
		alive := f.running()
		if lead != nil && len(alive) == 2 {
			other := alive[0]
			if other == lead {
				other = alive[1]
			}
			if leadState(other.logLines()) == "standby" {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no active agent with another standing by within 30 s (%d agents alive, active %v, last error %v)", len(alive), lead, err)
		}
		if err := sleepUntil(ctx, time.Now().Add(100*time.Millisecond)); err != nil {
			return err
		}
	}
}
