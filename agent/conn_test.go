package agent_test

import (
	"context"
	"testing"

	"github.com/pgjobs/pgjobs/agent"
)

// The session the agent opens to end a backend of a run given up connects and works whatever
// defaults its role set for itself meanwhile (the attacker reviews: a statement_timeout of 1 ms, a
// DateStyle, a search_path with an = of the role's first, transaction_timeout on PostgreSQL 17, a
// local_preload_libraries that fails every login).
func TestSessionToEndWinsOverRoleDefaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := cluster.NewDatabase(t)
	alice := cluster.NewRole(t, "alice", db)
	ac := cluster.ConnectAs(t, db, alice)
	var version int
	if err := ac.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	defaults := []string{
		"ALTER ROLE CURRENT_USER SET statement_timeout = 1",
		"ALTER ROLE CURRENT_USER SET DateStyle = 'SQL, DMY'",
		"ALTER ROLE CURRENT_USER SET search_path = public",
		"ALTER ROLE CURRENT_USER SET default_transaction_read_only = on",
		"ALTER ROLE CURRENT_USER SET local_preload_libraries = 'nonexistent'",
	}
	if version >= 170000 {
		defaults = append(defaults, "ALTER ROLE CURRENT_USER SET transaction_timeout = 1")
	}
	for _, sql := range defaults {
		if _, err := ac.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// Two sessions of one database agent: before PostgreSQL 17 the first learns that the server
	// has no transaction_timeout, and the second no longer names it.
	conns, namesTimeout, err := agent.OpenSessionToEnd(ctx, cluster.DSN(db), alice, 2)
	for _, conn := range conns {
		defer conn.Close(ctx)
	}
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	if namesTimeout != (version >= 170000) {
		t.Errorf("server %d: still names transaction_timeout: %v", version, namesTimeout)
	}
	for i, conn := range conns {
		var user, path, style, readOnly string
		if err := conn.QueryRow(ctx, "SELECT current_user, current_setting('search_path'), current_setting('DateStyle'), current_setting('transaction_read_only') FROM pg_catalog.pg_sleep(0.05)").Scan(&user, &path, &style, &readOnly); err != nil {
			t.Fatalf("session %d: a statement of 50 ms: %v", i+1, err)
		}
		if user != alice || path != "pg_catalog, pg_temp" || style != "ISO, MDY" && style != "ISO, DMY" || readOnly != "off" {
			t.Fatalf("session %d: user %s, search_path %q, DateStyle %q, read only %s: want %s, pg_catalog, ISO, off", i+1, user, path, style, readOnly, alice)
		}
	}
}
