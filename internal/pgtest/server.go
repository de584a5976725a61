package pgtest

// The server of a cluster of our own: initdb, start, stop, and finding the server programs.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Restart stops the server and starts it again on the same port.
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.StopServer(ctx); err != nil {
		return err
	}
	return c.StartServer(ctx)
}

// StopServer shuts the server down (fast shutdown: open sessions are ended) and waits for it.
func (c *Cluster) StopServer(ctx context.Context) error {
	if !c.Own() {
		return ErrExternal
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server == nil {
		return nil
	}
	_ = c.server.Process.Signal(syscall.SIGINT)
	select {
	case <-c.exited:
	case <-ctx.Done():
		_ = c.server.Process.Signal(syscall.SIGQUIT)
		<-c.exited
	}
	c.server = nil
	return nil
}

// StartServer starts the server of a cluster that StopServer stopped, and waits until it accepts
// connections.
func (c *Cluster) StartServer(ctx context.Context) error {
	if !c.Own() {
		return ErrExternal
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server != nil {
		return nil
	}
	logFile, err := os.OpenFile(filepath.Join(c.dir, "postgres.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	defer logFile.Close()
	cmd := c.command(filepath.Join(c.bindir, "postgres"),
		"-D", filepath.Join(c.dir, "data"),
		"-p", strconv.Itoa(c.port),
		"-k", c.dir,
		"-c", "listen_addresses=127.0.0.1",
		"-c", "fsync="+onOff(c.settings.Durable),
		"-c", "synchronous_commit="+onOff(c.settings.Durable),
		"-c", "full_page_writes="+onOff(c.settings.Durable),
		"-c", "max_connections="+strconv.Itoa(cmp.Or(c.settings.MaxConnections, 500)),
		"-c", "max_prepared_transactions=10", // so tests can try what a role could do with them
		"-c", "log_min_messages=warning",
	)
	for _, setting := range c.settings.Extra {
		cmd.Args = append(cmd.Args, "-c", setting)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// If the test binary dies without Close, the server shuts down at once.
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.server, c.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		c.waitErr = cmd.Wait()
		close(exited)
	}(c.exited)
	if err := c.waitReady(ctx); err != nil {
		_ = cmd.Process.Signal(syscall.SIGQUIT)
		<-c.exited
		c.server = nil
		return fmt.Errorf("start postgres on port %d: %w\n%s", c.port, err, c.logTail())
	}
	return nil
}

// waitReady waits until the server accepts connections or has exited.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for {
		err := c.ping(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-c.exited:
			return fmt.Errorf("postgres exited: %v", c.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("postgres not ready: %w", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *Cluster) ping(ctx context.Context) error {
	conn, err := c.connect(ctx, c.base.Database)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

func (c *Cluster) connect(ctx context.Context, database string) (*pgx.Conn, error) {
	cfg, err := c.ConnConfig(database)
	if err != nil {
		return nil, err
	}
	return pgx.ConnectConfig(ctx, cfg)
}

// admin runs one statement in the maintenance database.
func (c *Cluster) admin(ctx context.Context, sql string) error {
	conn, err := c.connect(ctx, c.base.Database)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

// startOnFreePort starts the server on a free port. A free port may be taken by someone else
// before the server binds it: it tries a few.
func (c *Cluster) startOnFreePort(ctx context.Context) error {
	var err error
	for attempt := 1; ; attempt++ {
		if c.port, err = freePort(); err == nil {
			c.base, err = pgconn.ParseConfig(fmt.Sprintf("host=%s port=%d user=postgres dbname=postgres sslmode=disable", c.dir, c.port))
		}
		if err == nil {
			err = c.StartServer(ctx)
		}
		if err == nil || attempt == 3 || ctx.Err() != nil {
			return err
		}
	}
}

// initdb creates the temporary directory and a cluster in it. Its default pg_hba.conf (trust)
// allows replication connections on the socket and on 127.0.0.1, which StartReplica uses.
func (c *Cluster) initdb(ctx context.Context) error {
	if err := c.makeDir(); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	cmd := c.command(filepath.Join(c.bindir, "initdb"),
		"-D", filepath.Join(c.dir, "data"), "-U", "postgres", "-A", "trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := runContext(ctx, cmd); err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out.String())
	}
	return nil
}

// makeDir creates the cluster's temporary directory, owned by the user the server runs as.
func (c *Cluster) makeDir() error {
	dir, err := os.MkdirTemp(socketTempDir(), "pgjobs-pgtest-")
	if err != nil {
		return err
	}
	c.dir = dir
	if c.runAs != nil {
		if err := os.Chown(dir, int(c.runAs.Uid), int(c.runAs.Gid)); err != nil {
			return fmt.Errorf("give %s to the postgres user: %w", dir, err)
		}
	}
	return nil
}

// command prepares a server program to run in the cluster's directory, as the postgres user under
// root, in a process group of its own: a Ctrl-C in the terminal (SIGINT to the foreground group)
// reaches the program that started the cluster, which stops it with Close when it is done.
func (c *Cluster) command(path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.runAs, Setpgid: true}
	return cmd
}

// LogPath returns the server's log file of our own cluster; "" for an external server.
func (c *Cluster) LogPath() string {
	if c.dir == "" {
		return ""
	}
	return filepath.Join(c.dir, "postgres.log")
}

func (c *Cluster) logTail() string {
	data, err := os.ReadFile(filepath.Join(c.dir, "postgres.log"))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-20):], "\n")
}

func (c *Cluster) removeDir() {
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// runContext runs cmd and kills it when ctx ends.
func runContext(ctx context.Context, cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		return ctx.Err()
	}
}

// serverBindir finds the directory of initdb and postgres.
func serverBindir() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if isServerBindir(dir) {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return majorVersion(dirs[i]) > majorVersion(dirs[j]) })
	for _, dir := range dirs {
		if isServerBindir(dir) {
			return dir, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries (initdb, postgres) found with pg_config --bindir or in /usr/lib/postgresql/*/bin: run make deps, or set " + DSNVariable)
}

func isServerBindir(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		if info, err := os.Stat(filepath.Join(dir, name)); err != nil || info.IsDir() {
			return false
		}
	}
	return true
}

var versionInPath = regexp.MustCompile(`/postgresql/([0-9]+)`)

func majorVersion(dir string) int {
	m := versionInPath.FindStringSubmatch(dir)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

// postgresUser returns the credentials of the postgres OS user, which runs the server under root.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("initdb refuses to run as root and there is no postgres OS user to run it as (%v): run make deps, or set %s", err, DSNVariable)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("postgres OS user: %w", err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// socketTempDir is where clusters live: TMPDIR unless its path is too long for a unix socket.
func socketTempDir() string {
	if dir := os.TempDir(); len(dir) < 60 {
		return dir
	}
	return "/tmp"
}

// removeStaleClusters removes the directories of earlier test runs whose server is gone (a test
// binary that was killed before Close).
func removeStaleClusters() {
	dirs, _ := filepath.Glob(filepath.Join(socketTempDir(), "pgjobs-pgtest-*"))
	for _, dir := range dirs {
		info, err := os.Stat(dir)
		if err != nil || time.Since(info.ModTime()) < 10*time.Minute {
			continue
		}
		pidFile, err := os.ReadFile(filepath.Join(dir, "data", "postmaster.pid"))
		if err == nil {
			pid, _ := strconv.Atoi(strings.SplitN(string(pidFile), "\n", 2)[0])
			if pid > 0 && syscall.Kill(pid, 0) == nil {
				continue // still running
			}
		}
		_ = os.RemoveAll(dir)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var notNameChar = regexp.MustCompile(`[^a-z0-9]+`)

// sanitize turns a test name into part of a database name.
func sanitize(name string) string {
	s := notNameChar.ReplaceAllString(strings.ToLower(name), "_")
	if len(s) > 40 {
		s = s[:40]
	}
	return strings.Trim(s, "_")
}

// quoteValue quotes a value of a keyword/value connection string.
func quoteValue(v string) string {
	if v != "" && !strings.ContainsAny(v, ` '\`) {
		return v
	}
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}
