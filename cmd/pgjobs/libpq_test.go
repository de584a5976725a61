package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLibpqEnvironment: the libpq variables give the defaults of every command, as in psql; the
// options override them; enabledb writes the host and port it connected to.
func TestLibpqEnvironment(t *testing.T) {
	t.Parallel()
	conf := filepath.Join(t.TempDir(), "pgjobs.conf")
	db := cluster.NewDatabase(t)
	port := strconv.Itoa(cluster.Port())
	env := []string{"PGJOBS_CONF=" + conf, "PGHOST=" + cluster.Host(), "PGPORT=" + port, "PGDATABASE=" + db, "PGUSER=" + cluster.User()}
	row := fmt.Sprintf("1=%s|%s|%s|0|%s|none|none", cluster.Host(), port, db, cluster.User())

	if got := runBinary(t, env, "enabledb"); got.code != 0 || !strings.HasSuffix(got.stdout, row+"\n") {
		t.Fatalf("enabledb from the environment: %#v, want the row %s", got, row)
	}
	if got := runBinary(t, env, "viewdb"); got != (result{row + "\n", "", 0}) {
		t.Fatalf("viewdb from the environment: %#v", got)
	}
	if got := runBinary(t, append(env, "PGDATABASE=nope"), "viewdb", "-d", db); got != (result{row + "\n", "", 0}) {
		t.Fatalf("viewdb -d over PGDATABASE: %#v", got)
	}
	if got := runBinary(t, env, "jobs"); got.code != 0 || !strings.HasPrefix(got.stdout, "NAME") {
		t.Fatalf("jobs from the environment: %#v", got)
	}
	// Settings the options do not carry come from the environment too: SSL mode (the test server
	// has no SSL; over TCP, as a unix socket has no SSL) and a service file.
	if got := runBinary(t, append(env, "PGHOST=127.0.0.1", "PGSSLMODE=require"), "jobs"); got.code != 1 || !strings.Contains(got.stderr, "TLS") {
		t.Fatalf("jobs with PGSSLMODE=require against a server without SSL: %#v", got)
	}
	services := filepath.Join(t.TempDir(), "pg_service.conf")
	if err := os.WriteFile(services, []byte(fmt.Sprintf("[test]\nhost=%s\nport=%s\ndbname=%s\n", cluster.Host(), port, db)), 0o644); err != nil {
		t.Fatal(err)
	}
	byService := []string{"PGJOBS_CONF=" + conf, "PGHOST=", "PGPORT=", "PGDATABASE=", "PGUSER=" + cluster.User(), "PGSERVICEFILE=" + services, "PGSERVICE=test"}
	if got := runBinary(t, byService, "viewdb"); got != (result{row + "\n", "", 0}) {
		t.Fatalf("viewdb by a service: %#v", got)
	}
	if got := runBinary(t, byService, "disabledb"); got.code != 0 {
		t.Fatalf("disabledb by a service: %#v", got)
	}
}
