// Command pgjobs is the pgjobs admin tool: it enables databases, edits the agent's configuration
// and answers questions about schedules.
package main

import (
	"os"
	_ "time/tzdata" // --tz works on machines without the system's zone files

	"github.com/urfave/cli/v2"
)

// Stamped by `make build` with -ldflags -X.
var (
	version = "dev"
	commit  = "none"
	date    = "unknown"
)

func main() {
	useLongHelpAndVersionFlags()
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// useLongHelpAndVersionFlags frees -h (HOST) and -v (VERSION) for the spec's options: help is
// --help only and the program's version --version only. It sets urfave/cli's package variables,
// so only main and TestMain call it.
func useLongHelpAndVersionFlags() {
	cli.HelpFlag = &cli.BoolFlag{Name: "help", Usage: "show help", DisableDefaultText: true}
	cli.VersionFlag = &cli.BoolFlag{Name: "version", Usage: "print the version", DisableDefaultText: true}
}
