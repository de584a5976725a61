package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/internal/printable"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

// Exit codes of pgjobs.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is an error in how pgjobs was called: an unknown flag, a missing or malformed argument.
type usageError struct{ err error }

// usageKey is where, in the application's Metadata, the usage line of the command being run is
// kept, for run to print it after a usage error.
const usageKey = "usage"

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// run runs pgjobs with args (args[0] is the program name) and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	app := newApp(stdout, stderr)
	err := app.Run(args)
	if err == nil {
		return exitOK
	}
	if topic, ok := strings.CutPrefix(err.Error(), "No help topic for "); ok { // urfave/cli's help command
		err = usagef("no command %s; pgjobs help lists them", topic)
		app.Metadata[usageKey] = "pgjobs help [COMMAND]"
	}
	printError(stderr, err)
	if errors.As(err, new(usageError)) {
		if usage, ok := app.Metadata[usageKey].(string); ok && usage != "" {
			fmt.Fprintf(stderr, "usage: %s\n", usage)
		}
		return exitUsage
	}
	return exitError
}

func newApp(stdout, stderr io.Writer) *cli.App {
	return &cli.App{
		Name:  "pgjobs",
		Usage: "administer pgjobs, the PostgreSQL job scheduler",
		UsageText: `pgjobs [--config FILE] COMMAND [OPTIONS]
pgjobs help [COMMAND]`,
		Description: `The options name the database as psql does: -h HOST, -p PORT, -d DATABASE, -u USER (psql's -U).
Help is --help or pgjobs help COMMAND, never -h, which is the host. --config FILE may come before
or after the command.`,
		Metadata: map[string]any{usageKey: "pgjobs [--config FILE] COMMAND [OPTIONS]"},
		Version:  fmt.Sprintf("%s (commit %s, built %s)", version, commit, date),
		Writer:   stdout,
		// ErrWriter gets what urfave/cli prints on its own; run prints the errors.
		ErrWriter:      stderr,
		OnUsageError:   onUsageError,
		ExitErrHandler: func(*cli.Context, error) {}, // run maps errors to exit codes, never os.Exit here
		Flags:          []cli.Flag{configFlag()},
		// bash completion (packaging/pgjobs.bash) asks the tool itself for its commands and options.
		EnableBashCompletion: true,
		Commands:             append(adminCommands(), jobsCommand(), runsCommand(), runJobCommand(), statusCommand(), nextCommand(), generateCommand()),
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("unknown command %q; see pgjobs --help", c.Args().First())
			}
			if err := cli.ShowAppHelp(c); err != nil {
				return err
			}
			return usagef("no command given")
		},
	}
}

// onUsageError turns urfave/cli's flag errors into usage errors instead of printing the help.
func onUsageError(c *cli.Context, err error, _ bool) error {
	noteUsage(c)
	return usagef("%w; see %s --help", err, c.Command.HelpName)
}

// noteUsage records the usage line of the command being run, for run to print after a usage
// error.
func noteUsage(c *cli.Context) {
	if c.Command != nil && c.Command.Name != "" {
		usage := c.Command.UsageText
		if usage == "" {
			usage = strings.TrimSpace(c.Command.HelpName + " [OPTIONS] " + c.Command.ArgsUsage)
		}
		c.App.Metadata[usageKey] = usage
	}
}

// printError prints err on one line, and under it, as psql does, the DETAIL and HINT of the
// PostgreSQL error it wraps, if any: the DETAIL names what keeps an object from being dropped, for
// one. Every line is made printable: the names in an error are often other roles'. PostgreSQL's
// own DETAIL is one line, its line breaks escaped (a role's column or constraint name, unquoted
// there, may hold one and add a line naming another object); one pgjobs made (DetailByLine) has
// an item a line.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "pgjobs: %s\n", printable.String(oneLine(err)))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return
	}
	for _, field := range []struct{ label, text string }{{"DETAIL", pgErr.Detail}, {"HINT", pgErr.Hint}} {
		if field.text == "" {
			continue
		}
		text := strings.TrimRight(field.text, "\n")
		lines := []string{text} // PostgreSQL's: a role's name in it may hold a line break, kept as \n
		if pgErr.Routine == sqlschema.DetailByLine {
			lines = strings.Split(text, "\n") // pgjobs' own: one printable item a line
		}
		fmt.Fprintf(w, "%s:  %s\n", field.label, printable.String(lines[0]))
		for _, line := range lines[1:] { // aligned under the first
			fmt.Fprintf(w, "%*s%s\n", len(field.label)+3, "", printable.String(line))
		}
	}
}

// oneLine folds an error onto one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
