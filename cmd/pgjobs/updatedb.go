package main

import (
	"fmt"
	"strconv"

	"github.com/pgjobs/pgjobs/config"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

func updateDB(c *cli.Context) error {
	t, chosen, err := target(c)
	if err != nil {
		return err
	}
	level, err := logLevelFlag(c)
	if err != nil {
		return err
	}
	if _, err := strconv.Atoi(c.String("pp")); c.IsSet("pp") && err != nil && c.String("pp") != config.Default {
		return usagef("-pp %q is not a port number", c.String("pp"))
	}
	var updated config.Database
	_, err = updateConfig(c, func(f *config.File) error {
		old, err := findRow(f, t, chosen)
		if err != nil {
			return err
		}
		updated = old
		for flag, field := range map[string]*string{"hh": &updated.Host, "pp": &updated.Port, "dd": &updated.Name,
			"u": &updated.User, "n": &updated.Notification, "r": &updated.Recipient} {
			if c.IsSet(flag) {
				*field = c.String(flag)
			}
		}
		if level != nil {
			updated.LogLevel = *level
		}
		if updated.Target() != old.Target() || updated.ResolvedUser() != old.ResolvedUser() {
			if err := checkEnabled(c.Context, updated); err != nil {
				return err
			}
		}
		return f.UpdateDatabase(old.ID, updated)
	})
	if err != nil {
		return fmt.Errorf("updatedb: %w", err)
	}
	fmt.Fprintln(c.App.Writer, updated.Line())
	if c.IsSet("retention") {
		value, err := setRetention(c, updated, c.String("retention"))
		if err != nil {
			return fmt.Errorf("updatedb: %s: %w", updated.Target(), err)
		}
		fmt.Fprintf(c.App.Writer, "run_retention=%s\n", value)
	}
	return nil
}

// setRetention sets the run_retention setting of a database with pgj_set_setting, as the row's
// user, and returns the value stored.
func setRetention(c *cli.Context, d config.Database, value string) (string, error) {
	conn, err := connect(c.Context, d)
	if err != nil {
		return "", err
	}
	defer conn.Close(c.Context)
	if err := sqlschema.Check(c.Context, conn); err != nil {
		return "", err
	}
	if _, err := conn.Exec(c.Context, "SELECT pgjobs.pgj_set_setting('run_retention', $1)", value); err != nil {
		return "", err
	}
	var stored string
	err = conn.QueryRow(c.Context, "SELECT value FROM pgjobs.pgj_settings WHERE name = 'run_retention'").Scan(&stored)
	return stored, err
}
