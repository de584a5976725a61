package main

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/config"
	"github.com/pgjobs/pgjobs/internal/printable"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

// updatesystem: the schema upgrade of every configured database, and its warnings.

// systemVersion is the system version a new configuration file records: the schema version.
func systemVersion() string { return fmt.Sprintf("%d.00", sqlschema.Latest()) }

func updateSystem(c *cli.Context) error {
	version := c.String("v")
	if version == "" {
		return usagef("updatesystem needs -v VERSION: the version of this pgjobs, %s", systemVersion())
	}
	if version != systemVersion() {
		return usagef("-v %q: this pgjobs brings the schema to system version %s and records only that: pgjobs updatesystem -v %[2]s", version, systemVersion())
	}
	f, err := loadConfig(c)
	if err != nil {
		return err
	}
	failed := 0
	for _, d := range f.Databases() {
		from, to, warnings, err := upgrade(c.Context, d)
		if err != nil {
			// each on its lines, with PostgreSQL's detail and hint: they name what to mend there
			printError(c.App.ErrWriter, fmt.Errorf("updatesystem: %s: %w", d.Target(), err))
			failed++
			continue
		}
		fmt.Fprint(c.App.ErrWriter, warnings)
		fmt.Fprintf(c.App.Writer, "%s: schema version %d -> %d\n", d.Target(), from, to)
	}
	if failed > 0 {
		n := len(f.Databases())
		return fmt.Errorf("updatesystem: system version not changed: the upgrade of %d of %d %s failed (above)", failed, n, plural(n, "database", "databases"))
	}
	if _, err := updateConfig(c, func(f *config.File) error { return f.SetSystem(version) }); err != nil {
		return fmt.Errorf("updatesystem: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "system=%s\n", version)
	return nil
}

// upgrade brings the schema of d to this pgjobs' version, and returns the upgrade's warnings (such
// as the jobs it stopped), one line each: the caller prints them once the upgrade has committed
// (an upgrade that fails changes nothing, and its warnings would tell of changes rolled back).
func upgrade(ctx context.Context, d config.Database) (from, to int, warnings string, err error) {
	var said strings.Builder
	var count int
	conn, err := connectNoticed(ctx, d, func(_ *pgconn.PgConn, n *pgconn.Notice) {
		// the severity as the server names it in English: the other is in its lc_messages
		if cmp.Or(n.SeverityUnlocalized, n.Severity) == "WARNING" {
			if count++; count <= maxWarnings {
				fmt.Fprintf(&said, "%s: warning: %s\n", d.Target(), printable.String(n.Message))
			}
		}
	})
	if err != nil {
		return 0, 0, "", err
	}
	defer conn.Close(ctx)
	if err := requireSuperuser(ctx, conn, "updatesystem", d); err != nil {
		return 0, 0, "", err
	}
	// the warnings reach this session whatever the role's or the database's setting
	if _, err := conn.Exec(ctx, "SET client_min_messages = warning"); err != nil {
		return 0, 0, "", fmt.Errorf("set client_min_messages: %w", err)
	}
	if from, to, err = sqlschema.Upgrade(ctx, conn); err != nil {
		return from, to, "", err
	}
	if count > maxWarnings {
		fmt.Fprintf(&said, "%s: %d warnings more (the server's log has them all)\n", d.Target(), count-maxWarnings)
	}
	return from, to, said.String(), nil
}

// maxWarnings is how many of an upgrade's warnings updatesystem prints (each may hold a call of
// 8 KB): the count of the others follows.
const maxWarnings = 100
