package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/pgjobs/pgjobs/agent/jobs"
	"github.com/pgjobs/pgjobs/schedule"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

// fireTimeLayout is RFC 3339 with the zone's numeric offset, also for UTC.
const fireTimeLayout = "2006-01-02T15:04:05-07:00"

// The usage lines of next's two forms: a schedule's fire times, and a job's.
const (
	nextScheduleUsage = "pgjobs next [--tz ZONE] [--from TIME] [--start TIME] [--count N] SCHEDULE"
	nextJobUsage      = "pgjobs next [-h HOST] [-p PORT] -d DATABASE [-u USER] [--tz ZONE] [--from TIME] [--count N] JOB"
)

func nextCommand() *cli.Command {
	return &cli.Command{
		Name:      "next",
		Usage:     "print the next fire times of a schedule, or of a job as the agent plans them",
		UsageText: nextScheduleUsage + "\n" + nextJobUsage,
		Description: `Prints the next N fire times strictly after --from (default: now), one per line, in RFC 3339
with the zone's offset, for scripts. Nothing is printed, with exit 0, when there is none.

With a SCHEDULE: its fire times in --tz (default: the local zone). An interval schedule counts
from --start (default: --from), the agent's start.

With -d DATABASE (and -h, -p, -u as pgjobs jobs takes them): the fire times of the job named JOB,
its start schedule and all its recurrences, as the agent plans them. It connects as USER and sees
that role's jobs only (a superuser's: all); another role's job is not found. The first time is the
job's next run as pgj_jobs shows it (the active agent's plan; when no agent runs, the one an agent
starting now would make), the others follow from it: interval schedules count from it, as they
count from the agent's start or takeover. --start does not apply. The zone is the one the agent
recorded that it reads schedules in, when the role may read it (superusers and the agents' roles);
else --tz, else the local zone: give --tz the agent's zone when it is not the local one. A paused
job prints nothing and says so on standard error; for a startup job, a note there says that it
also runs at each agent's start, which has no time. A job changed a moment ago, while an agent runs, prints nothing until the
agent has planned it (within a second).

Examples:
   pgjobs next 'D -1 17:30'
   pgjobs next --tz Europe/Berlin --from 2026-03-28T12:00:00+01:00 --count 3 'D 2:30'
   pgjobs next --from 2026-11-20T10:07:00Z --start 2026-11-20T10:00:00Z --tz UTC 'I 0:05'
   pgjobs next -d sales --count 5 OffLine`,
		Flags: append(nextTargetFlags(),
			&cli.StringFlag{Name: "u", Usage: "`USER` to connect as, with -d"},
			&cli.StringFlag{Name: "tz", Usage: "IANA time zone `ZONE` the schedule is read in (default: local; with -d, the agent's when readable)"},
			&cli.StringFlag{Name: "from", Usage: "RFC 3339 `TIME` to count from (default: now)"},
			&cli.StringFlag{Name: "start", Usage: "RFC 3339 `TIME` an interval schedule is anchored at (default: --from; not with -d)"},
			&cli.IntFlag{Name: "count", Value: 1, Usage: "how many fire times to print, `N` >= 1"},
		),
		OnUsageError: func(c *cli.Context, err error, sub bool) error {
			err = onUsageError(c, err, sub)
			c.App.Metadata[usageKey] = nextUsage(c)
			return err
		},
		Before: func(c *cli.Context) error {
			err := checkConfigFlags(c)
			c.App.Metadata[usageKey] = nextUsage(c)
			return err
		},
		Action: runNext,
	}
}

// nextTargetFlags are the options that name a database, with -d choosing the job form: PGDATABASE
// does not.
func nextTargetFlags() []cli.Flag {
	flags := targetFlags(false)
	for i, f := range flags {
		if f.Names()[0] == "d" {
			flags[i] = &cli.StringFlag{Name: "d", Usage: "`DATABASE` of the job: the one argument is then a JOB's name"}
		}
	}
	return flags
}

// nextUsage is the usage line of the form of next being run: the job's with -d.
func nextUsage(c *cli.Context) string {
	if c.IsSet("d") {
		return nextJobUsage
	}
	return nextScheduleUsage
}

func runNext(c *cli.Context) error {
	if c.IsSet("d") {
		return runNextJob(c)
	}
	for _, name := range []string{"h", "p", "u"} {
		if c.IsSet(name) {
			return usagef("-%s names the database of a job: pgjobs next -d DATABASE JOB", name)
		}
	}
	if c.NArg() != 1 {
		return usagef("next takes one SCHEDULE argument, quoted, such as pgjobs next 'D -1 17:30' (got %d arguments)", c.NArg())
	}
	loc, from, count, err := nextOptions(c)
	if err != nil {
		return err
	}
	start := from
	if text := c.String("start"); text != "" {
		if start, err = parseRFC3339("--start", text); err != nil {
			return err
		}
	}
	text := c.Args().First()
	s, err := schedule.Parse(text)
	if err != nil {
		return fmt.Errorf("invalid schedule %q: %w", text, err)
	}
	s = s.In(loc).AnchoredAt(start)
	var fires []time.Time
	for range count {
		next, ok := s.Next(from)
		if !ok {
			break
		}
		fires = append(fires, next)
		from = next
	}
	return printFires(c.App.Writer, fires)
}

// nextOptions returns the zone (--tz, else the local one), --from (else now) and --count.
func nextOptions(c *cli.Context) (loc *time.Location, from time.Time, count int, err error) {
	loc = time.Local
	if name := c.String("tz"); name != "" {
		if loc, err = time.LoadLocation(name); err != nil {
			return nil, from, 0, usagef("--tz %q is not a known IANA time zone", name)
		}
	}
	from = time.Now()
	if text := c.String("from"); text != "" {
		if from, err = parseRFC3339("--from", text); err != nil {
			return nil, from, 0, err
		}
	}
	if count = c.Int("count"); count < 1 {
		return nil, from, 0, usagef("--count %d: must be 1 or more", count)
	}
	return loc, from, count, nil
}

// runNextJob prints the fire times of a job as the agent plans them.
func runNextJob(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("next -d DATABASE takes one JOB argument, the job's name (got %d arguments)", c.NArg())
	}
	if c.IsSet("start") {
		return usagef("--start anchors a SCHEDULE's intervals; a job's count from its next run as the agent plans it")
	}
	loc, from, count, err := nextOptions(c)
	if err != nil {
		return err
	}
	zone := c.String("tz") // the session's TimeZone, in which pgj_jobs plans when no agent recorded its zone
	if zone == "" {
		if zone = localZoneName(); zone != "" {
			if _, err := time.LoadLocation(zone); err != nil {
				zone = ""
			}
		}
	}
	conn, t, err := connectTarget(c)
	if err != nil {
		return fmt.Errorf("next: %w", err)
	}
	defer conn.Close(c.Context)
	name := c.Args().First()
	job, err := sqlschema.JobFiresLoad(c.Context, conn, name, zone)
	if notFound := new(sqlschema.JobNotFoundError); errors.As(err, &notFound) {
		return fmt.Errorf("next: %w", err)
	} else if err != nil {
		return fmt.Errorf("next: %s: %w", t.Target(), err)
	}
	if job.Paused {
		fmt.Fprintf(c.App.ErrWriter, "pgjobs: job %s is paused: it fires nothing until pgj_resume_job resumes it\n", jobOf(name, nil))
		return nil
	}
	if job.Job.Startup {
		fmt.Fprintf(c.App.ErrWriter, "pgjobs: job %s also runs each time an agent starts or takes over\n", jobOf(name, nil))
	}
	if job.Zone != "" {
		if loc, err = time.LoadLocation(job.Zone); err != nil {
			return fmt.Errorf("next: the agent of %s reads schedules in zone %q, which this machine does not know: %w", t.Target(), job.Zone, err)
		}
	}
	fires, err := plannedFires(job.Job, loc, from, count)
	if err != nil {
		return fmt.Errorf("next: %w", err)
	}
	if mixesIntervals(job.Job) && len(fires) > 1 {
		fmt.Fprintf(c.App.ErrWriter, "pgjobs: job %s mixes an interval schedule with others: after the first fire, its interval fires are counted from that fire, while the agent counts them from its start (or takeover), so they may differ\n", jobOf(name, nil))
	}
	return printFires(c.App.Writer, fires)
}

// plannedFires returns up to count fires of a job strictly after from, as the agent plans them:
// the next run pgj_jobs shows first, when it lies after from, then the job's schedules from it,
// intervals counting from it. None when pgj_jobs shows no next run: the job never fires again.
func plannedFires(j sqlschema.StoredJob, loc *time.Location, from time.Time, count int) ([]time.Time, error) {
	if j.NextRun == nil {
		return nil, nil
	}
	planned := j.NextRun.In(loc)
	var fires []time.Time
	after := from
	if planned.After(from) {
		fires, after = append(fires, planned), planned
	}
	more, err := jobs.NextFires(j, loc, planned, after, count-len(fires))
	return append(fires, more...), err
}

// mixesIntervals reports whether a job has an interval schedule and a schedule of another kind:
// then the interval's fires depend on the agent's anchor, which pgj_jobs does not show.
func mixesIntervals(j sqlschema.StoredJob) bool {
	all := append([]string{}, j.Schedules...)
	if j.StartSchedule != nil {
		all = append(all, *j.StartSchedule)
	}
	intervals := 0
	for _, text := range all {
		if strings.HasPrefix(strings.TrimSpace(text), "I") {
			intervals++
		}
	}
	return intervals > 0 && intervals < len(all)
}

// localZoneName returns the IANA name of the local zone, from TZ, else from the link
// /etc/localtime, as the agent records it; "" when it cannot tell.
func localZoneName() string {
	path := "/etc/localtime"
	if tz, ok := os.LookupEnv("TZ"); ok {
		tz = strings.TrimPrefix(tz, ":")
		switch {
		case tz == "":
			return "UTC"
		case !strings.HasPrefix(tz, "/"):
			return tz
		}
		path = tz
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	if _, name, ok := strings.Cut(target, "zoneinfo/"); ok {
		return name
	}
	return ""
}

// printFires prints fire times one per line.
func printFires(w io.Writer, fires []time.Time) error {
	out := bufio.NewWriter(w)
	for _, f := range fires {
		fmt.Fprintln(out, f.Format(fireTimeLayout))
	}
	if err := out.Flush(); err != nil {
		return fmt.Errorf("write fire times: %w", err)
	}
	return nil
}

func parseRFC3339(flag, text string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, text)
	if err != nil {
		return time.Time{}, usagef("%s %q is not an RFC 3339 time such as 2026-03-29T03:00:00+02:00", flag, text)
	}
	return t, nil
}
