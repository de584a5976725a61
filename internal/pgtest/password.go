package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// hbaMu serializes the changes of pg_hba.conf by tests running in parallel.
var hbaMu sync.Mutex

// RequirePassword gives role the password and makes the cluster ask for it when role connects, on
// the socket and on 127.0.0.1 (every other role keeps trust authentication). It skips the test on
// an existing server, whose authentication is its own.
func (c *Cluster) RequirePassword(t testing.TB, role, password string) {
	t.Helper()
	if !c.Own() {
		t.Skip("the tests use an existing server, whose authentication is its own")
	}
	ctx := context.Background()
	if err := c.admin(ctx, fmt.Sprintf("ALTER ROLE %s PASSWORD %s", pgx.Identifier{role}.Sanitize(), quoteLiteral(password))); err != nil {
		t.Fatalf("set the password of %s: %v", role, err)
	}
	hbaMu.Lock()
	defer hbaMu.Unlock()
	path := filepath.Join(c.dir, "data", "pg_hba.conf")
	old, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := fmt.Sprintf("local all %[1]s scram-sha-256\nhost all %[1]s 127.0.0.1/32 scram-sha-256\n", role)
	if err := os.WriteFile(path, append([]byte(lines), old...), 0o600); err != nil { // first match wins
		t.Fatal(err)
	}
	if err := c.admin(ctx, "SELECT pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	// The server reloads in the background: wait until it asks role for its password.
	cfg, err := c.ConnConfig(c.base.Database)
	if err != nil {
		t.Fatal(err)
	}
	cfg.User, cfg.Password = role, ""
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return
		}
		conn.Close(ctx)
		if time.Now().After(deadline) {
			t.Fatalf("the server still lets %s in without a password", role)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// quoteLiteral returns s as an SQL string literal.
func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
