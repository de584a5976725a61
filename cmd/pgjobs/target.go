package main

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/config"
	"github.com/urfave/cli/v2"
)

// target returns the database a command names, as psql would find it: -h, -p and -d, else the
// libpq environment (PGHOST, PGPORT, PGDATABASE, PGSERVICE and its service file), else libpq's
// defaults (a unix socket folder, else localhost; port 5432). Host and Port are the ones a
// connection goes to, which enabledb writes into the configuration. chosen is false when neither
// the options nor the environment chose the host and port: then a configuration row is also found
// by its database name alone.
func target(c *cli.Context) (d config.Database, chosen bool, err error) {
	if c.NArg() > 0 {
		return config.Database{}, false, usagef("%s takes no arguments (got %q); see pgjobs %s --help", c.Command.Name, c.Args().First(), c.Command.Name)
	}
	return targetOf(c)
}

// targetOf is target for a command that checks its arguments itself.
func targetOf(c *cli.Context) (d config.Database, chosen bool, err error) {
	var settings []string
	for _, o := range []struct{ key, flag string }{{"host", "h"}, {"port", "p"}, {"dbname", "d"}} {
		if c.IsSet(o.flag) {
			if c.String(o.flag) == "" {
				return config.Database{}, false, usagef("-%s needs a value", o.flag)
			}
			settings = append(settings, o.key+"="+dsnQuote(c.String(o.flag)))
		}
	}
	cfg, err := pgconn.ParseConfig(strings.Join(settings, " "))
	if err != nil {
		return config.Database{}, false, usagef("-h, -p and -d, with the libpq environment (PGHOST, PGPORT, PGDATABASE, PGSERVICE): %v", err)
	}
	service := os.Getenv("PGSERVICE") != ""
	if !c.IsSet("d") && os.Getenv("PGDATABASE") == "" && !(service && cfg.Database != "") {
		return config.Database{}, false, usagef("%s needs -d DATABASE (or PGDATABASE)", c.Command.Name)
	}
	hosts := []string{cfg.Host}
	for _, fb := range cfg.Fallbacks {
		if !slices.Contains(hosts, fb.Host) {
			hosts = append(hosts, fb.Host)
		}
	}
	chosen = c.IsSet("h") || c.IsSet("p") || os.Getenv("PGHOST") != "" || os.Getenv("PGHOSTADDR") != "" || os.Getenv("PGPORT") != "" || service
	return config.Database{Host: strings.Join(hosts, ","), Port: strconv.Itoa(int(cfg.Port)), Name: cfg.Database}, chosen, nil
}

// targetUser is the role a command connects as: -u, else PGUSER, else "" (the configuration's
// default, postgres).
func targetUser(c *cli.Context) string {
	if c.IsSet("u") {
		return c.String("u")
	}
	return os.Getenv("PGUSER")
}

// dsnQuote quotes a value of a keyword/value connection string.
func dsnQuote(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v) + "'"
}

// findRow returns the configuration row of a target. When neither the options nor the
// environment chose the host and port (chosen false), a row is also found by its database name
// alone, if only one row has it: rows written before pgjobs followed libpq's defaults say
// "default" (localhost) where libpq now finds a unix socket.
func findRow(f *config.File, t config.Database, chosen bool) (config.Database, error) {
	if d, ok := f.Database(t.Host, t.Port, t.Name); ok {
		return d, nil
	}
	if !chosen {
		var named []config.Database
		for _, d := range f.Databases() {
			if d.Name == t.Name {
				named = append(named, d)
			}
		}
		switch len(named) {
		case 1:
			return named[0], nil
		case 0:
		default:
			targets := make([]string, len(named))
			for i, d := range named {
				targets[i] = d.Target()
			}
			return config.Database{}, usagef("%s has %d databases named %s (%s): choose one with -h HOST and -p PORT", f.Path(), len(named), t.Name, strings.Join(targets, ", "))
		}
	}
	return config.Database{}, fmt.Errorf("database %s is not in %s: enable it with pgjobs enabledb -d %s", t.Target(), f.Path(), shellWord(t.Name))
}
