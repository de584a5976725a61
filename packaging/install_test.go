//go:build installtest

package packaging_test

import (
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// The install test: run by `make test-install` (and .ci/run), as root, on a machine with dpkg. It
// installs the package built by `make deb` on this machine, runs the agent under its init script on a
// throwaway cluster, purges the package, and checks that nothing of pgjobs is left; then it runs
// pgjobs-install and pgjobs-remove in a temporary root.

const shareDir = "/usr/share/pgjobs"

// everything lists what the package installs or makes: none of it may exist before the test or
// after the purge.
var everything = []string{shareDir, "/usr/bin/pgjobs", "/etc/init.d/pgjobs", "/etc/default/pgjobs",
	"/lib/systemd/system/pgjobsagent.service", "/usr/share/man/man8/pgjobs.8.gz", "/usr/share/man/man8/pgjobsagent.8.gz",
	"/usr/share/bash-completion/completions/pgjobs", "/var/log/pgjobs", "/tmp/pgjobs", "/run/pgjobs"}

func TestInstall(t *testing.T) {
	deb, dist := os.Getenv("PGJOBS_DEB"), os.Getenv("PGJOBS_DIST")
	switch {
	case deb == "" || dist == "":
		t.Skip("run by make test-install, which builds the package (PGJOBS_DEB) and the distribution folder (PGJOBS_DIST)")
	case os.Geteuid() != 0:
		t.Skip("not root: installing a package needs root")
	}
	if _, err := exec.LookPath("dpkg"); err != nil {
		t.Skip("no dpkg on this machine")
	}
	for _, p := range everything {
		if _, err := os.Lstat(p); err == nil {
			t.Fatalf("%s exists: pgjobs is installed on this machine already, and this test would remove it; remove it first (pgjobs-remove or apt purge pgjobs)", p)
		}
	}
	pg, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("the postgres OS user, whom the agent runs as: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cluster, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()

	t.Run("package", func(t *testing.T) { testPackage(t, ctx, cluster, deb, pg) })
	t.Run("pgjobs-install", func(t *testing.T) { testInstallScripts(t, ctx, cluster, dist, pg) })
}

func testPackage(t *testing.T, ctx context.Context, cluster *pgtest.Cluster, deb string, pg *user.User) {
	// A link planted in /tmp (world-writable) where the package makes its temp folder: root must not
	// hand its target to the agent's user.
	planted := t.TempDir()
	if err := os.Chmod(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(planted, "/tmp/pgjobs"); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "dpkg", "-i", deb)
	checkPath(t, planted, 0o755|os.ModeDir, "root", "root")
	if err := os.Remove("/tmp/pgjobs"); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "dpkg-reconfigure", "pgjobs") // makes the folder now that the link is gone
	purged := false
	defer func() {
		if !purged {
			run("/etc/init.d/pgjobs", "stop")
			run("dpkg", "--purge", "pgjobs")
		}
	}()
	checkPath(t, shareDir+"/pgjobsagent", 0o755, "root", "root")
	checkPath(t, shareDir+"/pgjobs", 0o755, "root", "root")
	checkPath(t, shareDir+"/pgjobs.conf", 0o640, "root", pg.Username)
	checkPath(t, "/var/log/pgjobs", 0o750|os.ModeDir, pg.Username, pg.Username)
	checkPath(t, "/tmp/pgjobs", 0o750|os.ModeDir, pg.Username, pg.Username)
	checkPath(t, "/etc/init.d/pgjobs", 0o755, "root", "root")
	checkPath(t, "/etc/default/pgjobs", 0o644, "root", "root")
	checkPath(t, "/lib/systemd/system/pgjobsagent.service", 0o644, "root", "root")
	for _, p := range []string{"/usr/share/man/man8/pgjobs.8.gz", "/usr/share/man/man8/pgjobsagent.8.gz", "/usr/share/bash-completion/completions/pgjobs",
		shareDir + "/monitoring/pgjobs-alerts.yml", shareDir + "/monitoring/pgjobs-dashboard.json"} {
		checkPath(t, p, 0o644, "root", "root")
	}
	if target, err := os.Readlink("/usr/bin/pgjobs"); err != nil || target != shareDir+"/pgjobs" {
		t.Errorf("/usr/bin/pgjobs: want a link to %s/pgjobs, got %q, %v", shareDir, target, err)
	}
	conf := mustRead(t, shareDir+"/pgjobs.conf")
	if !strings.Contains(conf, "\nsystem=") || !strings.Contains(conf, "\nmaster=0\n") {
		t.Errorf("the new configuration lacks system=VERSION or master=0:\n%s", conf)
	}
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		mustRun(t, "systemd-analyze", "verify", "--man=no", "/lib/systemd/system/pgjobsagent.service")
	} else {
		t.Log("no systemd-analyze: the unit is not verified")
	}

	db := newDatabase(t, ctx, cluster, "installed")
	mustRun(t, "pgjobs", "enabledb", "-h", cluster.Host(), "-p", strconv.Itoa(cluster.Port()), "-d", db, "-u", cluster.User())
	mustRun(t, "pgjobs", "updatemaster", "-l", "2")
	conn := connect(t, ctx, cluster, db)
	mustExec(t, ctx, conn, `SELECT pgjobs.pgj_create_startup_job('Hello', 'install_hit(''hello'')')`)

	if code, out := run("/etc/init.d/pgjobs", "status"); code != 3 {
		t.Errorf("status before start: exit %d, want 3 (not running): %s", code, out)
	}
	mustRun(t, "/etc/init.d/pgjobs", "start")
	pid := strings.TrimSpace(mustRead(t, "/run/pgjobs/pgjobsagent.pid"))
	if owner := fileOwner(t, "/proc/"+pid); owner != pg.Username {
		t.Errorf("the agent (pid %s) runs as %s, want %s", pid, owner, pg.Username)
	}
	waitForHits(t, ctx, conn, "hello", 1, 30*time.Second)
	for _, dir := range []string{"/var/log/pgjobs/master", "/var/log/pgjobs/1"} {
		logs, _ := filepath.Glob(dir + "/*.log")
		if len(logs) == 0 {
			t.Errorf("no log file in %s", dir)
		}
	}
	if code, out := run("/etc/init.d/pgjobs", "status"); code != 0 {
		t.Errorf("status while running: exit %d, want 0: %s", code, out)
	}

	// A job added while the agent runs fires once the configuration is reloaded (it would anyway:
	// the agent hears of new jobs; reload must not disturb that).
	mustExec(t, ctx, conn, `SELECT pgjobs.pgj_create_schedule('EveryMinute', 'I 0:01')`)
	mustExec(t, ctx, conn, `SELECT pgjobs.pgj_create_job('Tick', 'install_hit(''tick'')', null, 'EveryMinute')`)
	mustRun(t, "/etc/init.d/pgjobs", "reload")
	waitForHits(t, ctx, conn, "tick", 1, 150*time.Second)
	if code, out := run("/etc/init.d/pgjobs", "status"); code != 0 {
		t.Errorf("status after reload: exit %d, want 0: %s", code, out)
	}

	// The pid file is postgres's to write: made a FIFO, it must not hang root's status or stop.
	mustRun(t, "runuser", "-u", pg.Username, "--", "sh", "-c", "rm -f /run/pgjobs/pgjobsagent.pid && mkfifo /run/pgjobs/pgjobsagent.pid")
	if code, out := run("timeout", "10", "/etc/init.d/pgjobs", "status"); code != 0 {
		t.Errorf("status with a FIFO for a pid file: exit %d, want 0 (running), not a hang (124): %s", code, out)
	}

	// An upgrade (the same package again) keeps the configuration and starts the agent again: the
	// configuration names a database.
	confBefore := mustRead(t, shareDir+"/pgjobs.conf")
	mustRun(t, "dpkg", "-i", deb)
	if now := mustRead(t, shareDir+"/pgjobs.conf"); now != confBefore {
		t.Errorf("the upgrade changed the configuration:\n%s\nwas:\n%s", now, confBefore)
	}
	if code, out := run("/etc/init.d/pgjobs", "status"); code != 0 {
		t.Errorf("status after the upgrade: exit %d, want 0 (started again): %s", code, out)
	}

	mustRun(t, "/etc/init.d/pgjobs", "stop")
	if code, out := run("/etc/init.d/pgjobs", "status"); code != 3 {
		t.Errorf("status after stop: exit %d, want 3: %s", code, out)
	}
	conn.Close(ctx)
	mustRun(t, "dpkg", "--purge", "pgjobs")
	purged = true
	for _, p := range everything {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is left after the purge", p)
		}
	}
	if links, _ := filepath.Glob("/etc/rc?.d/[SK]??pgjobs"); len(links) > 0 {
		t.Errorf("init links left after the purge: %v", links)
	}
	if code, _ := run("dpkg", "-s", "pgjobs"); code == 0 {
		t.Error("dpkg still knows the package after the purge")
	}
}
