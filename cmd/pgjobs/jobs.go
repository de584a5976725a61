package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/config"
	"github.com/pgjobs/pgjobs/internal/printable"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

func jobsCommand() *cli.Command {
	return command(&cli.Command{
		Name:      "jobs",
		Usage:     "list a database's jobs with their owners, schedules, next and last runs",
		UsageText: "pgjobs jobs [-h HOST] [-p PORT] -d DATABASE [-u USER] [--json]",
		Description: `Connects as USER (default: PGUSER, else the user of the database's configuration row, else
postgres) and lists the jobs that role may see: any role that may connect can use it. A paused
job's NEXT RUN says paused. A name is cut past 64 characters as printed, a call or the schedules
past 100, ending in "...". --json prints a JSON array of the jobs, whole, for scripts.

Example:
   pgjobs jobs -d sales
   pgjobs jobs -d sales --json`,
		Flags: append(targetFlags(false), &cli.StringFlag{Name: "u", Usage: "`USER` to connect as"},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array"}),
		Action: listJobs,
	})
}

func listJobs(c *cli.Context) error {
	conn, t, err := connectReader(c)
	if err != nil {
		return fmt.Errorf("jobs: %w", err)
	}
	defer conn.Close(c.Context)
	jobs, err := sqlschema.JobList(c.Context, conn)
	if err != nil {
		return fmt.Errorf("jobs: %s: %w", t.Target(), err)
	}
	if c.Bool("json") {
		return printJSON(c.App.Writer, jobs)
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tOWNER\tFUNCTION\tSTARTS\tRECURS ON\tNEXT RUN\tLAST RUN\tLAST STATUS")
	for _, j := range jobs {
		starts := orDash(j.StartSchedule)
		if j.Startup {
			starts = "at agent start"
		}
		recurs := strings.Join(j.Recurrences, ", ")
		if recurs == "" {
			recurs = "-"
		}
		next := timeOrDash(j.NextRun)
		if j.Paused {
			next = "paused"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(j.Name), cell(j.Owner), cellOf(j.Function, maxTextCell), cellOf(starts, maxTextCell), cellOf(recurs, maxTextCell),
			next, timeOrDash(j.LastRun), orDash(j.LastStatus))
	}
	return w.Flush()
}

// connectReader connects for a read-only command: to the database the options or the libpq
// environment name, as its configuration row's user unless -u or PGUSER says otherwise, and
// checks its schema version.
func connectReader(c *cli.Context) (*pgx.Conn, config.Database, error) {
	if _, _, err := target(c); err != nil {
		return nil, config.Database{}, err
	}
	return connectTarget(c)
}

// connectTarget is connectReader for a command that checks its arguments itself.
func connectTarget(c *cli.Context) (*pgx.Conn, config.Database, error) {
	t, chosen, err := targetOf(c)
	if err != nil {
		return nil, t, err
	}
	if f, err := config.Load(configPath(c)); err == nil {
		if row, err := findRow(f, t, chosen); err == nil {
			t = row
		}
	}
	if user := targetUser(c); user != "" {
		t.User = user
	}
	conn, err := connect(c.Context, t)
	if err != nil {
		return nil, t, err
	}
	if err := sqlschema.Check(c.Context, conn); err != nil {
		conn.Close(c.Context)
		return nil, t, fmt.Errorf("%s: %w", t.Target(), err)
	}
	return conn, t, nil
}

// printJSON prints v as indented JSON, made printable (printable.JSON).
func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(printable.JSON(buf.Bytes()))
	return err
}

func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

func timeOrDash(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format(fireTimeLayout)
}

// cell returns a role's name for a column of a table, printable and cut to maxNameCell
// characters; quoted as PostgreSQL quotes identifiers when it holds two blanks in a row, starts or
// ends with one, or starts with a quote, or is empty: the columns are apart by two blanks or more,
// and such a name could lay out cells of its own (a job named "Backup" and forty blanks, then
// "alice ... ok", read as alice's run).
func cell(s string) string { return cellOf(s, maxNameCell) }

// cellOf is cell for a column whose cells may be max characters wide: a call, schedules.
func cellOf(s string, max int) string {
	if s == "" || strings.Contains(s, "  ") || strings.HasPrefix(s, " ") || strings.HasSuffix(s, " ") || strings.HasPrefix(s, `"`) {
		return cut(printable.String(pgx.Identifier{s}.Sanitize()), max)
	}
	return cut(printable.String(s), max)
}

// The widest cells of a table, in characters as printed: every row is padded to its column's
// widest cell, and escapes make a role's text up to ten times wider than it is (\U000e0100), so
// that one role's name or call could push every other role's row off the screen. --json has them
// whole.
const (
	maxNameCell = 64  // a job's, an owner's name
	maxTextCell = 100 // a call, schedules
)

// cut returns s, printable, cut to at most max characters, ending in "..." when it was cut.
func cut(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	return string([]rune(s)[:max-3]) + "..."
}
