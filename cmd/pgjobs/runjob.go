package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

// requestPoll is how often run --wait looks at its request.
const requestPoll = 200 * time.Millisecond

// noAgentNote is how long run --wait waits for an agent to take its request before it says that
// none leads the database.
const noAgentNote = 5 * time.Second

func runJobCommand() *cli.Command {
	return command(&cli.Command{
		Name:      "run",
		Usage:     "ask the active agent to run a job now",
		UsageText: "pgjobs run [-h HOST] [-p PORT] -d DATABASE [-u USER] [--wait] [--timeout DURATION] JOB",
		Description: `Asks the database's active agent to run JOB at once (SELECT pgj_run_job('JOB')), as it runs
any run: on a session of the job's owner, recorded in pgj_runs with the request's id in its
request column (and no scheduled time). Only the job's owner or a superuser may ask: connect as
that role with -u. The agent takes the request within a moment through its wake-up channel; with
no agent active it waits until one is. A job that is paused, or whose run is still going, is not
run, and the request says why. Asking again while a request of the job waits returns that one.

Without --wait it prints the request's id and exits 0. With --wait it waits for the run's end and
exits with its status: 0 when it ended ok, 1 when it failed, was cancelled or abandoned, or was not
run (the reason on standard error), 1 after --timeout.

Example:
   pgjobs run -d sales -u billing Invoices
   pgjobs run -d sales -u billing --wait --timeout 10m Invoices`,
		Flags: append(targetFlags(false), &cli.StringFlag{Name: "u", Usage: "`USER` to connect as: the job's owner or a superuser"},
			&cli.BoolFlag{Name: "wait", Usage: "wait for the run's end and exit with its status"},
			&cli.DurationFlag{Name: "timeout", Usage: "with --wait, give up after `DURATION`, such as 30s or 10m (default: wait until the run ends)"}),
		Action: runJobNow,
	})
}

func runJobNow(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("run takes one JOB name (got %d arguments)", c.NArg())
	}
	if c.IsSet("timeout") && !c.Bool("wait") {
		return usagef("--timeout needs --wait")
	}
	if c.IsSet("timeout") && c.Duration("timeout") <= 0 {
		return usagef("--timeout %s: must be more than 0", c.Duration("timeout"))
	}
	job := c.Args().First()
	conn, t, err := connectTarget(c)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer conn.Close(c.Context)
	id, err := sqlschema.RequestRun(c.Context, conn, job)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return fmt.Errorf("run: %s: %w", t.Target(), pgMessage{pgErr})
	}
	if err != nil {
		return fmt.Errorf("run: %s: %w", t.Target(), err)
	}
	fmt.Fprintf(c.App.Writer, "request %d: job %s asked to run now on %s\n", id, jobOf(job, nil), t.Target())
	if !c.Bool("wait") {
		return nil
	}
	ctx := c.Context
	if c.IsSet("timeout") {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Duration("timeout"))
		defer cancel()
	}
	asked, noted := time.Now(), false
	tick := time.NewTicker(requestPoll)
	defer tick.Stop()
	for {
		r, err := sqlschema.RequestRead(ctx, conn, id)
		if err != nil && ctx.Err() != nil {
			break
		}
		if err != nil {
			return fmt.Errorf("run: %s: %w", t.Target(), err)
		}
		if r.Ended() {
			return reportRun(c, job, r)
		}
		if !noted && r.Taken == nil && time.Since(asked) >= noAgentNote {
			noted = true
			if led, err := sqlschema.LeaderActive(c.Context, conn); err == nil && led != nil && !*led {
				fmt.Fprintf(c.App.ErrWriter, "pgjobs: run: no agent is active on %s: the job runs once one is\n", t.Target())
			} else {
				fmt.Fprintf(c.App.ErrWriter, "pgjobs: run: no agent has taken request %d after %s\n", id, noAgentNote)
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
			continue
		}
		break
	}
	return fmt.Errorf("run: request %d: job %s did not end within --timeout %s (it may still run: pgjobs runs --job %s shows it)", id, jobOf(job, nil), c.Duration("timeout"), shellWord(job))
}

// reportRun prints how a request's run ended and returns an error unless it ended ok.
func reportRun(c *cli.Context, job string, r sqlschema.RequestState) error {
	if r.Status == nil {
		return errors.New("run: " + *r.Refused)
	}
	took := ""
	if r.Started != nil && r.Finished != nil {
		took = " in " + r.Finished.Sub(*r.Started).Round(time.Millisecond).String()
	}
	if *r.Status == sqlschema.RunOK {
		fmt.Fprintf(c.App.Writer, "job %s ended ok%s\n", jobOf(job, nil), took)
		return nil
	}
	why := []string{}
	if r.SQLState != nil {
		why = append(why, *r.SQLState)
	}
	if r.Message != nil {
		why = append(why, *r.Message)
	}
	return fmt.Errorf("run: job %s ended %s%s: %s", job, *r.Status, took, strings.Join(why, ": "))
}

// shellWord returns s as one word of a POSIX shell's command line, single-quoted unless it is
// made of letters, digits and _ . - / : only: a command pgjobs suggests names a role's job or a
// database, which a DBA may paste into a shell, and a name must not run anything there.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.-/:", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// pgMessage is a PostgreSQL error told by its message alone (pgj_run_job's refusals name the
// function and the job), its DETAIL and HINT kept for printError.
type pgMessage struct{ *pgconn.PgError }

func (e pgMessage) Error() string { return e.Message }
func (e pgMessage) Unwrap() error { return e.PgError }
