// Command pgjobsagent is the pgjobs agent: it runs the jobs of every database in the
// configuration, one database agent each, until SIGTERM or SIGINT.
package main

import (
	"os"
	_ "time/tzdata" // schedules read in any zone also without the system's zone files

	"github.com/urfave/cli/v2"
)

// Stamped by `make build` with -ldflags -X.
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	cli.HelpFlag = &cli.BoolFlag{Name: "help", Usage: "show help", DisableDefaultText: true}
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version", DisableDefaultText: true}
	os.Exit(run(os.Args, os.Stdout, os.Stderr, nil))
}
