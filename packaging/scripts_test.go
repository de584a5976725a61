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

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/internal/pgtest"
)

// testInstallScripts runs pgjobs-install into a temporary root, twice, enables a database in that
// root's configuration, and removes it all with pgjobs-remove, twice: the database is disabled and
// no file is left.
func testInstallScripts(t *testing.T, ctx context.Context, cluster *pgtest.Cluster, dist string, pg *user.User) {
	root := t.TempDir()
	install := filepath.Join(dist, "pgjobs-install")
	for range 2 {
		mustRun(t, install, "--destdir", root)
	}
	share := root + shareDir
	checkPath(t, share+"/pgjobsagent", 0o755, "root", "root")
	checkPath(t, share+"/pgjobs.conf", 0o640, "root", pg.Username)
	checkPath(t, root+"/var/log/pgjobs", 0o750|os.ModeDir, pg.Username, pg.Username)
	checkPath(t, root+"/etc/init.d/pgjobs", 0o755, "root", "root")
	if target, err := os.Readlink(root + "/usr/bin/pgjobs"); err != nil || target != shareDir+"/pgjobs" {
		t.Errorf("/usr/bin/pgjobs in the root: want a link to %s/pgjobs, got %q, %v", shareDir, target, err)
	}

	db := newDatabase(t, ctx, cluster, "scripted")
	tool, conf := share+"/pgjobs", share+"/pgjobs.conf"
	mustRun(t, tool, "--config", conf, "enabledb", "-h", cluster.Host(), "-p", strconv.Itoa(cluster.Port()), "-d", db, "-u", cluster.User())
	remove := filepath.Join(dist, "pgjobs-remove")
	// A database that cannot be reached keeps every other as it was, and every file.
	text := mustRead(t, conf)
	indented := strings.Replace(text, "\n1=", "\n\t1=", 1) // the tool reads rows with leading blanks too
	down := "9=" + cluster.Host() + "|1|nowhere|0|" + cluster.User() + "|none|none\n"
	writeFile(t, conf, indented+down)
	if code, out := run(remove, "--destdir", root); code != 1 || !strings.Contains(out, "nothing was changed") {
		t.Errorf("pgjobs-remove with a database down: exit %d, want 1 saying nothing was changed:\n%s", code, out)
	}
	if _, err := os.Stat(share + "/pgjobsagent"); err != nil {
		t.Errorf("pgjobs-remove with a database down deleted the agent: %v", err)
	}
	conn := connect(t, ctx, cluster, db)
	var schema *string
	if err := conn.QueryRow(ctx, "SELECT to_regnamespace('pgjobs')::text").Scan(&schema); err != nil || schema == nil {
		t.Errorf("pgjobs-remove with another database down disabled %s (%v)", db, err)
	}
	writeFile(t, conf, indented)
	if out := mustRun(t, remove, "--destdir", root); !strings.Contains(out, "disabled database "+db) {
		t.Errorf("pgjobs-remove did not say it disabled %s:\n%s", db, out)
	}
	if err := conn.QueryRow(ctx, "SELECT to_regnamespace('pgjobs')::text").Scan(&schema); err != nil || schema != nil {
		t.Errorf("database %s keeps its pgjobs schema after pgjobs-remove (%v)", db, err)
	}
	conn.Close(ctx)
	var left []string
	filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			left = append(left, strings.TrimPrefix(p, root))
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("pgjobs-remove left files: %v", left)
	}
	if out := mustRun(t, remove, "--destdir", root); strings.Contains(out, "deleted") {
		t.Errorf("pgjobs-remove run again deleted something:\n%s", out)
	}

	// --keep-config keeps the configuration.
	mustRun(t, install, "--destdir", root)
	mustRun(t, remove, "--destdir", root, "--keep-config")
	if _, err := os.Stat(conf); err != nil {
		t.Errorf("pgjobs-remove --keep-config removed the configuration: %v", err)
	}
	if _, err := os.Stat(share + "/pgjobsagent"); err == nil {
		t.Error("pgjobs-remove --keep-config kept the agent")
	}

	// Installed under another prefix, the installed pgjobs-remove finds its configuration.
	mustRun(t, remove, "--destdir", root)
	mustRun(t, install, "--destdir", root, "--prefix", "/opt/pgj")
	if out := mustRun(t, root+"/opt/pgj/share/pgjobs/pgjobs-remove", "--destdir", root); strings.Contains(out, "kept") || !strings.Contains(out, "deleted /opt/pgj/share/pgjobs/pgjobs.conf") {
		t.Errorf("the installed pgjobs-remove of prefix /opt/pgj did not remove that install:\n%s", out)
	}

	// Without root and without --destdir, both refuse, saying why.
	scripts, err := os.MkdirTemp("", "pgjobs-scripts-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(scripts)
	for _, name := range []string{"pgjobs-install", "pgjobs-remove"} {
		copyFile(t, filepath.Join(dist, name), filepath.Join(scripts, name))
	}
	if err := os.Chmod(scripts, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"pgjobs-install", "pgjobs-remove"} {
		code, out := run("runuser", "-u", pg.Username, "--", filepath.Join(scripts, name))
		if code != 4 || !strings.Contains(out, "only root may") {
			t.Errorf("%s as %s: exit %d, want 4 and a message saying only root may:\n%s", name, pg.Username, code, out)
		}
	}
}

// newDatabase makes a database with install_hit(job), which records that job ran.
func newDatabase(t *testing.T, ctx context.Context, cluster *pgtest.Cluster, name string) string {
	t.Helper()
	admin := connect(t, ctx, cluster, "postgres")
	defer admin.Close(ctx)
	mustExec(t, ctx, admin, "DROP DATABASE IF EXISTS "+name)
	mustExec(t, ctx, admin, "CREATE DATABASE "+name)
	conn := connect(t, ctx, cluster, name)
	defer conn.Close(ctx)
	mustExec(t, ctx, conn, `CREATE TABLE install_hits (job text, at timestamptz DEFAULT clock_timestamp());
		CREATE FUNCTION install_hit(job text) RETURNS void LANGUAGE sql AS $$ INSERT INTO install_hits (job) VALUES (job) $$`)
	return name
}

// waitForHits waits until job has run n times, as its own rows say, or fails after limit. The agent
// is another process: its rows are what tells.
func waitForHits(t *testing.T, ctx context.Context, conn *pgx.Conn, job string, n int, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var hits int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM install_hits WHERE job = $1", job).Scan(&hits); err != nil {
			t.Fatal(err)
		}
		if hits >= n {
			return
		}
		if time.Now().After(deadline) {
			out, _ := exec.Command("sh", "-c", "tail -n 30 /var/log/pgjobs/*/*.log").CombinedOutput()
			t.Fatalf("job %s ran %d times in %s, want %d; the agent's logs:\n%s", job, hits, limit, n, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
