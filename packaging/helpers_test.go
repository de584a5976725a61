//go:build installtest

package packaging_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// run runs a command and returns its exit code and its output (stdout and stderr).
func run(name string, args ...string) (int, string) {
	var out bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), out.String()
	default:
		return -1, err.Error()
	}
}

// mustRun runs a command that must succeed and returns its output.
func mustRun(t *testing.T, name string, args ...string) string {
	t.Helper()
	code, out := run(name, args...)
	t.Logf("$ %s %v (exit %d)\n%s", name, args, code, out)
	if code != 0 {
		t.Fatalf("%s %v: exit %d", name, args, code)
	}
	return out
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o640); err != nil {
		t.Fatal(err)
	}
}

// checkPath checks the type and permissions, owner and group of path.
func checkPath(t *testing.T, path string, mode os.FileMode, owner, group string) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if info.Mode() != mode {
		t.Errorf("%s: mode %v, want %v", path, info.Mode(), mode)
	}
	st := info.Sys().(*syscall.Stat_t)
	if got := userName(st.Uid); got != owner {
		t.Errorf("%s: owner %s, want %s", path, got, owner)
	}
	if g, err := user.LookupGroupId(strconv.Itoa(int(st.Gid))); err != nil || g.Name != group {
		t.Errorf("%s: group %d (%v), want %s", path, st.Gid, err, group)
	}
}

// fileOwner names the owner of path: of a process for /proc/PID.
func fileOwner(t *testing.T, path string) string {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return userName(info.Sys().(*syscall.Stat_t).Uid)
}

func userName(uid uint32) string {
	u, err := user.LookupId(strconv.Itoa(int(uid)))
	if err != nil {
		return strconv.Itoa(int(uid))
	}
	return u.Username
}

func connect(t *testing.T, ctx context.Context, cluster *pgtest.Cluster, db string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, cluster.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

func mustExec(t *testing.T, ctx context.Context, conn *pgx.Conn, sql string) {
	t.Helper()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
