package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pgjobs/pgjobs/agent"
	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/config"
	"github.com/pgjobs/pgjobs/internal/authwatch"
	"github.com/pgjobs/pgjobs/internal/metrics"
	"github.com/pgjobs/pgjobs/internal/printable"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

// Exit codes of pgjobsagent.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// DefaultLogDir is where the agent writes its logs unless --log-dir says otherwise.
const DefaultLogDir = "/var/log/pgjobs"

// configPoll is how often the agent looks whether the configuration file changed.
const configPoll = time.Second

type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

// run runs pgjobsagent with args and returns the exit code. ready, if not nil, receives the
// master agent once it runs (for tests).
// usageLine lists every option of pgjobsagent.
const usageLine = "pgjobsagent [--config FILE] [--log-dir DIR] [--foreground] [--pidfile FILE] [--grace DURATION] [--listen ADDR] [--listen-token FILE] [--listen-insecure] [--metrics-jobs N] [--check-config] [--help] [--version]"

func run(args []string, stdout, stderr io.Writer, ready chan<- *agent.Master) int {
	app := &cli.App{
		Name:      "pgjobsagent",
		Usage:     "run the pgjobs jobs of every configured database",
		UsageText: usageLine,
		Description: `Runs one database agent per database of the configuration file. Each sleeps until its nearest job
fires, runs it on a session of the job's owner and records it in pgjobs.pgj_run_.

Signals: SIGHUP reloads the configuration and reopens the log files; SIGTERM or SIGINT stops softly
(no new runs; runs in flight may finish within --grace, then they are cancelled); a second one
cancels at once. The configuration file is also reloaded when it changes; a broken file keeps the
last good configuration.

Example:
   pgjobsagent --config /usr/share/pgjobs/pgjobs.conf --foreground`,
		Version:         fmt.Sprintf("%s (commit %s, built %s)", version, commit, date),
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {},
		OnUsageError:    func(_ *cli.Context, err error, _ bool) error { return usageError{err} },
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "config", Usage: "configuration `FILE` (default: $" + config.PathVariable + ", else " + config.DefaultPath + ")"},
			&cli.StringFlag{Name: "log-dir", Value: DefaultLogDir, Usage: "log root `DIR`: DIR/master/YYYY.MM.DD.log and DIR/ID/YYYY.MM.DD.log; a log that cannot be written is reported on standard error at once, then at most once a minute, and the agent keeps running"},
			&cli.BoolFlag{Name: "foreground", Usage: "also write the log lines to standard error, each after its agent's name and a | (master|, 1|)"},
			&cli.StringFlag{Name: "pidfile", Usage: "write the process id to `FILE` while running and hold a lock (flock) on it: a second agent with the same FILE refuses to start, a stale FILE is taken over; FILE must be a regular file, not a symbolic link"},
			&cli.BoolFlag{Name: "check-config", Usage: "check the configuration file and every database it names, print the problems and exit"},
			&cli.DurationFlag{Name: "grace", Value: 30 * time.Second, Usage: "how long a soft stop waits for runs in flight, a `DURATION` such as 30s or 2m"},
			&cli.BoolFlag{Name: "man", Hidden: true, Usage: "print the man page (for packaging)"},
		}, listenFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError{fmt.Errorf("pgjobsagent takes no arguments (got %q)", c.Args().First())}
			}
			if c.Bool("man") {
				page, err := c.App.ToMan()
				if err != nil {
					return fmt.Errorf("generate the man page: %w", err)
				}
				_, err = fmt.Fprint(stdout, page)
				return err
			}
			path := config.ResolvePath(c.String("config"), os.Getenv)
			if c.Bool("check-config") {
				return checkConfig(c.Context, path, stdout)
			}
			return serve(c, path, stderr, ready)
		},
	}
	err := app.Run(args)
	if err == nil {
		return exitOK
	}
	fmt.Fprintf(stderr, "pgjobsagent: %s\n", printable.String(strings.Join(strings.Fields(err.Error()), " ")))
	if errors.As(err, new(usageError)) {
		fmt.Fprintf(stderr, "usage: %s\n", usageLine)
		return exitUsage
	}
	return exitError
}

// checkConfig validates the file and every database row it names.
func checkConfig(ctx context.Context, path string, out io.Writer) error {
	f, err := config.Load(path)
	if err != nil {
		return err
	}
	problems := 0
	for _, d := range f.Databases() {
		if err := checkDatabase(ctx, d); err != nil {
			problems++
			fmt.Fprintf(out, "%s: agent %d (%s): %s\n", path, d.ID, d.Target(), printable.String(strings.Join(strings.Fields(err.Error()), " ")))
			continue
		}
		fmt.Fprintf(out, "%s: agent %d (%s): ok\n", path, d.ID, d.Target())
	}
	if problems > 0 {
		return fmt.Errorf("%d of %d databases have problems", problems, len(f.Databases()))
	}
	fmt.Fprintf(out, "%s: ok, %d databases\n", path, len(f.Databases()))
	return nil
}

func checkDatabase(ctx context.Context, d config.Database) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, err := pgxConnect(ctx, d.DSN())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	return sqlschema.Check(ctx, conn)
}

// serve runs the agent until a stop signal.
func serve(c *cli.Context, path string, stderr io.Writer, ready chan<- *agent.Master) error {
	// Before the pid file exists: whoever reads it may signal at once, and a signal that comes during
	// the start is handled once the agent runs.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, syscall.SIGHUP, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(signals)
	if name := c.String("pidfile"); name != "" {
		pf, err := acquirePidFile(name)
		if err != nil {
			return err
		}
		defer func() {
			if err := pf.release(); err != nil {
				fmt.Fprintf(stderr, "pgjobsagent: %v\n", err)
			}
		}()
	}
	f, err := config.Load(path)
	if err != nil {
		return err
	}
	var also io.Writer
	if c.Bool("foreground") {
		also = stderr
	}
	logs := &logFiles{
		dir: c.String("log-dir"), also: also, errors: prefixWriter{stderr, "pgjobsagent: "},
		levels: map[string]*slog.LevelVar{}, handlers: map[string]*agentlog.Handler{},
	}
	defer logs.close(stderr)
	masterLog, err := logs.logger(agentlog.MasterAgent, int(f.Master()))
	if err != nil {
		return err
	}
	var gauges *metrics.Agent
	if c.String("listen") != "" {
		gauges = metrics.New(metrics.Options{MaxJobs: c.Int("metrics-jobs"), Version: version, Commit: commit})
		gauges.Started(time.Now())
	}
	host, _ := os.Hostname()
	master := agent.NewMaster(agent.Options{
		Name:            fmt.Sprintf("%s pid %d", host, os.Getpid()),
		Sessions:        f.Sessions(),
		ScramIterations: f.ScramIterations(),
		Metrics:         gauges,
		Logger: func(id, level int) *slog.Logger {
			l, err := logs.logger(strconv.Itoa(id), level)
			if err != nil {
				masterLog.Error(err.Error(), "status", "starting")
				return slog.New(slog.DiscardHandler)
			}
			return l
		},
	}, masterLog)
	masterLog.Log(c.Context, agentlog.LevelEssential, "pgjobsagent starting", "status", "starting",
		"version", version, "commit", commit, "config", path, "log_dir", logs.dir, "master_loglevel", int(f.Master()), "sessions", sessionsSetting(f), "scram_iterations", scramSetting(f), "databases", len(f.Databases()))
	if os.Geteuid() == 0 {
		// Runs go through sessions of their owners, so root gains nothing; but a process that reads
		// ~/.pgpass and writes logs should not have root's power over the machine.
		masterLog.Error("warning: pgjobsagent runs as root; run it as the postgres OS user (the init script and the systemd unit do)", "status", "starting")
		fmt.Fprintln(stderr, "pgjobsagent: warning: running as root; run it as the postgres OS user (the init script and the systemd unit do)")
	}
	for _, d := range f.Databases() {
		masterLog.Log(c.Context, agentlog.LevelEssential, "database in the configuration", "status", "starting",
			"id", d.ID, "target", d.Target(), "user", d.ResolvedUser(), "loglevel", int(d.LogLevel))
	}
	endpoint, err := startListener(c, gauges, master)
	if err != nil {
		return err
	}
	defer func() {
		if err := endpoint.close(); err != nil {
			fmt.Fprintf(stderr, "pgjobsagent: %v\n", err)
		}
	}()
	if endpoint != nil {
		gauges.SetSource(master)
		masterLog.Log(c.Context, agentlog.LevelEssential, "serving /metrics, /healthz and /readyz on "+endpoint.Addr(), "status", "starting", "token", c.String("listen-token") != "")
	}
	master.Apply(agentDatabases(f))
	// One line on standard error whatever the log level, so whoever starts the agent sees that it runs
	// and where it logs.
	serving := ""
	if endpoint != nil {
		serving = ", metrics on http://" + endpoint.Addr() + "/metrics"
	}
	fmt.Fprintf(stderr, "pgjobsagent: started, pid %d: configuration %s, logs in %s at master log level %d%s, %s\n",
		os.Getpid(), path, logs.dir, int(f.Master()), serving, servedList(f))
	if ready != nil {
		ready <- master
	}

	poll := time.NewTicker(configPoll)
	defer poll.Stop()
	stamp := fileStamp(path)
	reload := func(why string) {
		nf, err := config.Load(path)
		if err != nil {
			gauges.Loaded(false, time.Now())
			masterLog.Error("configuration not reloaded, the last good one stays: "+err.Error(), "status", "reloading")
			return
		}
		gauges.Loaded(true, time.Now())
		masterLog.Log(c.Context, agentlog.LevelEssential, "configuration reloaded ("+why+")", "status", "reloading", "databases", len(nf.Databases()),
			"sessions", sessionsSetting(nf), "scram_iterations", scramSetting(nf))
		logs.setLevel(agentlog.MasterAgent, int(nf.Master()))
		master.SetSessions(nf.Sessions())
		master.SetScramIterations(nf.ScramIterations())
		master.Apply(agentDatabases(nf))
	}
	for {
		select {
		case sig := <-signals:
			switch sig {
			case syscall.SIGHUP:
				logs.reopen(stderr)
				reload("SIGHUP")
				stamp = fileStamp(path)
			default:
				masterLog.Log(c.Context, agentlog.LevelEssential, "stopping on "+sig.String()+": no new runs; runs in flight may finish", "status", "stopping", "grace", c.Duration("grace").String())
				stopped := make(chan struct{})
				go func() {
					master.Stop(c.Duration("grace"))
					close(stopped)
				}()
			waitStop:
				for {
					select {
					case <-stopped:
						break waitStop
					case sig := <-signals:
						if sig == syscall.SIGHUP {
							logs.reopen(stderr) // log rotation goes on; it is no second stop signal
							continue
						}
						masterLog.Log(c.Context, agentlog.LevelEssential, "second signal "+sig.String()+": cancelling the runs", "status", "stopping")
						master.Cancel()
						<-stopped
						break waitStop
					}
				}
				masterLog.Log(c.Context, agentlog.LevelEssential, "pgjobsagent stopped", "status", "stopped")
				fmt.Fprintf(stderr, "pgjobsagent: stopped on %s\n", sig)
				return nil
			}
		case <-poll.C:
			if now := fileStamp(path); now != stamp {
				stamp = now
				reload("the file changed")
			}
		}
	}
}

// scramSetting describes the scram_iterations setting of f for the log.
func scramSetting(f *config.File) string {
	if n := f.ScramIterations(); n > 0 {
		return strconv.Itoa(n)
	}
	return fmt.Sprintf("%d (the default)", authwatch.DefaultMaxIterations)
}

// sessionsSetting describes the sessions setting of f for the log.
func sessionsSetting(f *config.File) string {
	if n := f.Sessions(); n > 0 {
		return strconv.Itoa(n) + " per server"
	}
	return "half of each server's connections for ordinary roles"
}

// servedList names the databases of the configuration for the start line.
func servedList(f *config.File) string {
	dbs := f.Databases()
	if len(dbs) == 0 {
		return "no database to serve (add one with pgjobs enabledb)"
	}
	names := make([]string, len(dbs))
	for i, d := range dbs {
		names[i] = fmt.Sprintf("%d %s", d.ID, d.Target())
	}
	noun := "databases"
	if len(dbs) == 1 {
		noun = "database"
	}
	return fmt.Sprintf("serving %d %s: %s", len(dbs), noun, strings.Join(names, ", "))
}

// agentDatabases turns the configuration's rows into the agent's.
func agentDatabases(f *config.File) []agent.Database {
	var dbs []agent.Database
	for _, d := range f.Databases() {
		dbs = append(dbs, agent.Database{ID: d.ID, DSN: d.DSN(), LogLevel: int(d.LogLevel), Name: d.Name})
	}
	return dbs
}

// fileStamp tells when a file changed: its modification time, size and inode.
func fileStamp(path string) string {
	info, err := os.Stat(path)
	if err != nil {
		return "missing"
	}
	var inode uint64
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		inode = st.Ino
	}
	return fmt.Sprintf("%d %d %d", info.ModTime().UnixNano(), info.Size(), inode)
}
