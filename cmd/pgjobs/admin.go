package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/pgjobs/pgjobs/config"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

// The commands of specification section 4 and their flags, spelled as the specification does:
// single-dash names of several letters (-hh, -pp, -dd) are flags of their own.

func configFlag() cli.Flag {
	return &cli.StringFlag{Name: "config", Usage: "configuration `FILE` (default: $" + config.PathVariable + ", else " + config.DefaultPath + ")"}
}

func targetFlags(withUser bool) []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "h", Usage: "database server `HOST`: a name, an address, a unix-socket directory or a list host1,host2 (default: PGHOST, else libpq's: a unix socket, else localhost)"},
		&cli.StringFlag{Name: "p", Usage: "database server `PORT` (default: PGPORT, else 5432)"},
		&cli.StringFlag{Name: "d", Usage: "`DATABASE` name (default: PGDATABASE; required)"},
	}
	if withUser {
		flags = append(flags,
			&cli.StringFlag{Name: "u", Usage: "`USER` the agent connects as (default: PGUSER, else postgres)"},
			&cli.StringFlag{Name: "n", Usage: "`NOTIFICATION` (a placeholder: not interpreted in this release)"},
			&cli.StringFlag{Name: "r", Usage: "`RECIPIENT` (a placeholder: not interpreted in this release)"},
		)
	}
	return append(flags, configFlag())
}

// command fills in what every command shares.
func command(c *cli.Command) *cli.Command {
	c.OnUsageError = onUsageError
	c.Before = checkConfigFlags
	return c
}

func adminCommands() []*cli.Command {
	return []*cli.Command{
		command(&cli.Command{
			Name:      "enabledb",
			Usage:     "install the pgjobs schema in a database and add it to the agent's configuration",
			UsageText: "pgjobs enabledb [-h HOST] [-p PORT] -d DATABASE [-u USER] [-n NOTIFICATION] [-r RECIPIENT]",
			Description: `Fails, changing nothing, when the database is already enabled (its pgjobs schema or its
configuration row exists). Connects as USER (default: PGUSER, else postgres), who must be a superuser; passwords come from
PGPASSWORD, ~/.pgpass or a service file. The row records the host and port it connected to: the
options, else PGHOST and PGPORT (or PGSERVICE), else libpq's defaults (a unix socket folder).

Example:
   pgjobs enabledb -d sales -u postgres`,
			Flags:  targetFlags(true),
			Action: enableDB,
		}),
		command(&cli.Command{
			Name:      "disabledb",
			Usage:     "remove the pgjobs schema from a database and the database from the agent's configuration",
			UsageText: "pgjobs disabledb [-h HOST] [-p PORT] -d DATABASE",
			Description: `Drops the schema with every schedule, job and run in it.

Example:
   pgjobs disabledb -d sales`,
			Flags:  targetFlags(false),
			Action: disableDB,
		}),
		command(&cli.Command{
			Name:        "viewsystem",
			Usage:       "print the system configuration",
			UsageText:   "pgjobs viewsystem",
			Description: "Example:\n   pgjobs viewsystem",
			Flags:       []cli.Flag{configFlag()},
			Action:      viewSystem,
		}),
		command(&cli.Command{
			Name:        "viewmaster",
			Usage:       "print the master agent's configuration",
			UsageText:   "pgjobs viewmaster",
			Description: "Example:\n   pgjobs viewmaster",
			Flags:       []cli.Flag{configFlag()},
			Action:      viewMaster,
		}),
		command(&cli.Command{
			Name:        "viewdb",
			Usage:       "print a database's configuration",
			UsageText:   "pgjobs viewdb [-h HOST] [-p PORT] -d DATABASE",
			Description: "Example:\n   pgjobs viewdb -d sales",
			Flags:       targetFlags(false),
			Action:      viewDB,
		}),
		command(&cli.Command{
			Name:      "updatesystem",
			Usage:     "upgrade the pgjobs schema of every configured database and record the system version",
			UsageText: "pgjobs updatesystem -v VERSION",
			Description: `Brings the schema of each configured database to the version this pgjobs carries, each in its own
transaction, then writes system=VERSION. If a database cannot be upgraded, the version is not written.

Example:
   pgjobs updatesystem -v 5.00`,
			Flags:  []cli.Flag{&cli.StringFlag{Name: "v", Usage: "system `VERSION`: the version of this pgjobs (pgjobs viewsystem after an upgrade prints it)"}, configFlag()},
			Action: updateSystem,
		}),
		command(&cli.Command{
			Name:        "updatemaster",
			Usage:       "change the master agent's log level",
			UsageText:   "pgjobs updatemaster -l LOGLEVEL",
			Description: "Example:\n   pgjobs updatemaster -l 1",
			Flags:       []cli.Flag{&cli.StringFlag{Name: "l", Usage: "`LOGLEVEL` 0..5"}, configFlag()},
			Action:      updateMaster,
		}),
		command(&cli.Command{
			Name:      "updatedb",
			Usage:     "change a database's configuration",
			UsageText: "pgjobs updatedb [-h HOST] [-p PORT] -d DATABASE [-hh NEWHOST] [-pp NEWPORT] [-dd NEWDATABASE] [-l LOGLEVEL] [-u USER] [-n NOTIFICATION] [-r RECIPIENT] [--retention INTERVAL]",
			Description: `A new host, port or database must be reachable and enabled (pgjobs enabledb) already.

Example:
   pgjobs updatedb -d sales -l 2
   pgjobs updatedb -d sales -hh db1,db2
   pgjobs updatedb -d sales --retention '90 days'`,
			Flags: append(targetFlags(true),
				&cli.StringFlag{Name: "hh", Usage: "new `NEWHOST`"},
				&cli.StringFlag{Name: "pp", Usage: "new `NEWPORT`"},
				&cli.StringFlag{Name: "dd", Usage: "new `NEWDATABASE`"},
				&cli.StringFlag{Name: "l", Usage: "`LOGLEVEL` 0..5"},
				&cli.StringFlag{Name: "retention", Usage: "how long the run history is kept, an `INTERVAL` such as '90 days' (the database's run_retention setting; needs a superuser)"},
			),
			Action: updateDB,
		}),
	}
}

func enableDB(c *cli.Context) error {
	d, _, err := target(c)
	if err != nil {
		return err
	}
	d.User, d.Notification, d.Recipient = targetUser(c), c.String("n"), c.String("r")
	ctx := c.Context
	var added config.Database
	var commit func() error
	var rollback func()
	_, err = updateConfig(c, func(f *config.File) error {
		if existing, ok := f.Database(d.Host, d.Port, d.Name); ok {
			return fmt.Errorf("database %s is already enabled (row %d of %s): disable it first with pgjobs disabledb -d %s", d.Target(), existing.ID, f.Path(), d.Name)
		}
		if f.System() == "" {
			if err := f.SetSystem(systemVersion()); err != nil {
				return err
			}
		}
		var err error
		if added, err = f.AddDatabase(d); err != nil {
			return err
		}
		// Install in a transaction that commits only once the file is written.
		commit, rollback, err = inTransaction(ctx, "enabledb", added, func(ctx context.Context, tx sqlschema.DB) error {
			return sqlschema.Install(ctx, tx)
		})
		if errors.Is(err, sqlschema.ErrAlreadyEnabled) {
			return fmt.Errorf("database %s already has a pgjobs schema: disable it first with pgjobs disabledb -d %s", d.Target(), d.Name)
		}
		return err
	})
	if err != nil {
		if rollback != nil {
			rollback()
		}
		return fmt.Errorf("enabledb: %w", err)
	}
	if err := commit(); err != nil {
		// The file has the row but the schema is not there: take the row back out.
		_, undoErr := updateConfig(c, func(f *config.File) error { return f.RemoveDatabase(added.ID) })
		return fmt.Errorf("enabledb: install the schema in %s: %w", d.Target(), errors.Join(err, undoErr))
	}
	fmt.Fprintf(c.App.Writer, "enabled pgjobs in %s as agent %d\n%s\n", added.Target(), added.ID, added.Line())
	return nil
}

func disableDB(c *cli.Context) error {
	t, chosen, err := target(c)
	if err != nil {
		return err
	}
	ctx := c.Context
	var removed config.Database
	var commit func() error
	var rollback func()
	_, err = updateConfig(c, func(f *config.File) error {
		var err error
		if removed, err = findRow(f, t, chosen); err != nil {
			return err
		}
		if err := f.RemoveDatabase(removed.ID); err != nil {
			return err
		}
		commit, rollback, err = inTransaction(ctx, "disabledb", removed, func(ctx context.Context, tx sqlschema.DB) error {
			err := sqlschema.Uninstall(ctx, tx)
			if errors.Is(err, sqlschema.ErrNotEnabled) {
				fmt.Fprintf(c.App.ErrWriter, "pgjobs: %s had no pgjobs schema; removing its configuration row\n", removed.Target())
				return nil
			}
			return err
		})
		return err
	})
	if err != nil {
		if rollback != nil {
			rollback()
		}
		return fmt.Errorf("disabledb: %w", err)
	}
	if err := commit(); err != nil {
		_, undoErr := updateConfig(c, func(f *config.File) error {
			_, err := f.AddDatabase(removed)
			return err
		})
		return fmt.Errorf("disabledb: drop the schema in %s: %w", removed.Target(), errors.Join(err, undoErr))
	}
	fmt.Fprintf(c.App.Writer, "disabled pgjobs in %s (agent %d)\n", removed.Target(), removed.ID)
	return nil
}

// inTransaction connects to a database, checks that the role is a superuser, begins a transaction and runs work in it. It returns
// functions that commit or roll back and close the connection; on error it has done that already.
func inTransaction(ctx context.Context, command string, d config.Database, work func(context.Context, sqlschema.DB) error) (commit func() error, rollback func(), err error) {
	conn, err := connect(ctx, d)
	if err != nil {
		return nil, nil, err
	}
	if err := requireSuperuser(ctx, conn, command, d); err != nil {
		conn.Close(ctx)
		return nil, nil, err
	}
	tx, err := conn.Begin(ctx)
	if err == nil {
		err = work(ctx, tx)
	}
	if err != nil {
		conn.Close(ctx)
		return nil, nil, err
	}
	commit = func() error {
		defer conn.Close(ctx)
		return tx.Commit(ctx)
	}
	rollback = func() {
		_ = tx.Rollback(ctx)
		conn.Close(ctx)
	}
	return commit, rollback, nil
}

func viewSystem(c *cli.Context) error {
	f, err := loadConfig(c)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "system=%s\n", f.System())
	return nil
}

func viewMaster(c *cli.Context) error {
	f, err := loadConfig(c)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "master=%d\n", f.Master())
	return nil
}

func viewDB(c *cli.Context) error {
	t, chosen, err := target(c)
	if err != nil {
		return err
	}
	f, err := loadConfig(c)
	if err != nil {
		return err
	}
	d, err := findRow(f, t, chosen)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.App.Writer, d.Line())
	return nil
}

func updateMaster(c *cli.Context) error {
	level, err := logLevelFlag(c)
	if err != nil {
		return err
	}
	if level == nil {
		return usagef("updatemaster needs -l LOGLEVEL")
	}
	f, err := updateConfig(c, func(f *config.File) error { return f.SetMaster(*level) })
	if err != nil {
		return fmt.Errorf("updatemaster: %w", err)
	}
	fmt.Fprintf(c.App.Writer, "master=%d\n", f.Master())
	return nil
}

// logLevelFlag reads -l; nil when it is not given.
func logLevelFlag(c *cli.Context) (*config.LogLevel, error) {
	if !c.IsSet("l") {
		return nil, nil
	}
	level, err := config.ParseLogLevel(c.String("l"))
	if err != nil {
		return nil, usagef("-l %q: %v", c.String("l"), err)
	}
	return &level, nil
}

// checkEnabled tells whether a database is reachable and has the pgjobs schema of this version.
func checkEnabled(ctx context.Context, d config.Database) error {
	conn, err := connect(ctx, d)
	if err != nil {
		return fmt.Errorf("the new target is not reachable: %w", err)
	}
	defer conn.Close(ctx)
	if err := sqlschema.Check(ctx, conn); errors.Is(err, sqlschema.ErrNotEnabled) {
		return fmt.Errorf("the new target %s has no pgjobs schema: install it first with pgjobs enabledb, or run the agent on the old one", d.Target())
	} else if err != nil {
		return fmt.Errorf("the new target %s: %w", d.Target(), err)
	}
	return nil
}
