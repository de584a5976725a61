package main

import (
	"fmt"

	"github.com/pgjobs/pgjobs/config"
	"github.com/urfave/cli/v2"
)

// generateCommand writes what the package installs beside the binaries: the man page and the
// configuration file of a new install. Hidden: `make deb` and `make install` run it.
func generateCommand() *cli.Command {
	return &cli.Command{
		Name:      "generate",
		Hidden:    true,
		Usage:     "print what packaging needs: man (the man page), config (a new install's configuration) or databases (the configuration's rows: ID HOST PORT DATABASE USER, a line each)",
		UsageText: "pgjobs [--config FILE] generate man|config|databases",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usagef("pgjobs generate takes one argument, man, config or databases")
			}
			switch c.Args().First() {
			case "man":
				page, err := c.App.ToMan()
				if err != nil {
					return fmt.Errorf("generate the man page: %w", err)
				}
				_, err = fmt.Fprint(c.App.Writer, page)
				return err
			case "config":
				text := newInstallConfig()
				if _, err := config.Parse(config.DefaultPath, []byte(text)); err != nil {
					return fmt.Errorf("the configuration of a new install does not parse: %w", err)
				}
				_, err := fmt.Fprint(c.App.Writer, text)
				return err
			case "databases":
				// For pgjobs-remove and the maintainer scripts: the rows as the agent reads them, so
				// that a shell never parses the file itself.
				f, err := config.Load(configPath(c))
				if err != nil {
					return err
				}
				for _, d := range f.Databases() {
					if _, err := fmt.Fprintf(c.App.Writer, "%d %s %s %s %s\n", d.ID, d.Host, d.Port, d.Name, d.User); err != nil {
						return err
					}
				}
				return nil
			default:
				return usagef("pgjobs generate: no %q; choose man, config or databases", c.Args().First())
			}
		},
	}
}

// newInstallConfig is the configuration file of a new install: the schema version this pgjobs
// installs, the master agent logging errors and essential information, and no database.
func newInstallConfig() string {
	return fmt.Sprintf(`# pgjobs configuration: see man pgjobs. Change it with the pgjobs tool (enabledb, disabledb,
# update*); the agent reads it again when it changes.
#
# This is the currently installed version of pgjobs
system=%s
#
# The master agent's log level: 0 errors only ... 5 everything
master=0
#
# One row per database, added by pgjobs enabledb:
# id=host|port|database|loglevel|user|notification|recipient
`, systemVersion())
}
