package main

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/internal/printable"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

func runsCommand() *cli.Command {
	return command(&cli.Command{
		Name:      "runs",
		Usage:     "list a database's last runs with their status, duration and message",
		UsageText: "pgjobs runs [-h HOST] [-p PORT] -d DATABASE [-u USER] [--job NAME] [--failed] [--since INTERVAL] [--limit N] [--json]",
		Description: `Connects as pgjobs jobs does and lists the runs that role may see, latest first: whose
job each was, when it was scheduled and started, how long it took, how it ended and why. --failed
keeps the runs that failed, were cancelled or abandoned, and the fires that were missed. --json
prints every column of pgj_runs (DETAIL, HINT, CONTEXT too), for scripts.

Example:
   pgjobs runs -d sales --failed --since '1 day'
   pgjobs runs -d sales --job Billing --limit 5 --json`,
		Flags: append(targetFlags(false), &cli.StringFlag{Name: "u", Usage: "`USER` to connect as"},
			&cli.StringFlag{Name: "job", Usage: "only the runs of job `NAME`"},
			&cli.BoolFlag{Name: "failed", Usage: "only failed, cancelled and abandoned runs and missed fires"},
			&cli.StringFlag{Name: "since", Usage: "only the runs of the last `INTERVAL`, a PostgreSQL interval such as '1 day' or '2 hours'"},
			&cli.IntFlag{Name: "limit", Value: 50, Usage: "at most `N` runs, the latest"},
			&cli.BoolFlag{Name: "json", Usage: "print a JSON array"}),
		Action: listRuns,
	})
}

func listRuns(c *cli.Context) error {
	f := sqlschema.RunFilter{Failed: c.Bool("failed"), Limit: c.Int("limit")}
	if f.Limit < 1 {
		return usagef("--limit %d: must be 1 or more", f.Limit)
	}
	if c.IsSet("job") {
		job := c.String("job")
		f.Job = &job
	}
	if c.IsSet("since") {
		since := c.String("since")
		f.Since = &since
	}
	conn, t, err := connectReader(c)
	if err != nil {
		return fmt.Errorf("runs: %w", err)
	}
	defer conn.Close(c.Context)
	runs, err := sqlschema.RunList(c.Context, conn, f)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && f.Since != nil && (pgErr.Code == "22007" || pgErr.Code == "22008" || pgErr.Code == "22015") {
		return usagef("--since %q is not a PostgreSQL interval such as '1 day' or '2 hours': %s", *f.Since, pgErr.Message)
	}
	if err != nil {
		return fmt.Errorf("runs: %s: %w", t.Target(), err)
	}
	if c.Bool("json") {
		if runs == nil {
			runs = []sqlschema.RunRow{}
		}
		return printJSON(c.App.Writer, runs)
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "JOB\tOWNER\tSCHEDULED\tSTARTED\tDURATION\tSTATUS\tMESSAGE")
	for _, r := range runs {
		scheduled := timeOrDash(r.Scheduled)
		if r.Scheduled == nil && r.Request != nil {
			scheduled = fmt.Sprintf("by hand (request %d)", *r.Request)
		} else if r.Scheduled == nil && r.Started != nil {
			scheduled = "at agent start"
		}
		duration := "-"
		if r.Duration != nil {
			duration = r.Duration.Round(time.Millisecond).String()
		}
		message := orDash(r.Message)
		if r.SQLState != nil {
			message = *r.SQLState + ": " + message
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", cell(r.Job), cell(r.Owner), scheduled, timeOrDash(r.Started), duration, r.Status,
			printable.String(strings.Join(strings.Fields(message), " ")))
	}
	return w.Flush()
}
