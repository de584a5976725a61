package main

import (
	"bufio"
	"fmt"
	"time"

	"github.com/pgjobs/pgjobs/schedule"
	"github.com/urfave/cli/v2"
)

// fireTimeLayout is RFC 3339 with the zone's numeric offset, also for UTC.
const fireTimeLayout = "2006-01-02T15:04:05-07:00"

func nextCommand() *cli.Command {
	return &cli.Command{
		Name:      "next",
		Usage:     "print the next fire times of a schedule",
		UsageText: "pgjobs next [--tz ZONE] [--from TIME] [--start TIME] [--count N] SCHEDULE",
		Description: `Prints the next N fire times of SCHEDULE strictly after --from, one per line, in RFC 3339
with the zone's offset. A schedule that never fires again prints nothing. An interval schedule
counts from --start, the agent's start.

Examples:
   pgjobs next 'D -1 17:30'
   pgjobs next --tz Europe/Berlin --from 2026-03-28T12:00:00+01:00 --count 3 'D 2:30'
   pgjobs next --from 2026-11-20T10:07:00Z --start 2026-11-20T10:00:00Z --tz UTC 'I 0:05'`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "tz", Usage: "IANA time zone `ZONE` the schedule is read in (default: local)"},
			&cli.StringFlag{Name: "from", Usage: "RFC 3339 `TIME` to count from (default: now)"},
			&cli.StringFlag{Name: "start", Usage: "RFC 3339 `TIME` an interval schedule is anchored at (default: --from)"},
			&cli.IntFlag{Name: "count", Value: 1, Usage: "how many fire times to print, `N` >= 1"},
		},
		OnUsageError: onUsageError,
		Before:       checkConfigFlags,
		Action:       runNext,
	}
}

func runNext(c *cli.Context) error {
	if c.NArg() != 1 {
		return usagef("next takes one SCHEDULE argument, quoted, such as pgjobs next 'D -1 17:30' (got %d arguments)", c.NArg())
	}
	loc := time.Local
	if name := c.String("tz"); name != "" {
		var err error
		if loc, err = time.LoadLocation(name); err != nil {
			return usagef("--tz %q is not a known IANA time zone", name)
		}
	}
	from := time.Now()
	if text := c.String("from"); text != "" {
		var err error
		if from, err = parseRFC3339("--from", text); err != nil {
			return err
		}
	}
	start := from
	if text := c.String("start"); text != "" {
		var err error
		if start, err = parseRFC3339("--start", text); err != nil {
			return err
		}
	}
	count := c.Int("count")
	if count < 1 {
		return usagef("--count %d: must be 1 or more", count)
	}
	text := c.Args().First()
	s, err := schedule.Parse(text)
	if err != nil {
		return fmt.Errorf("invalid schedule %q: %w", text, err)
	}
	s = s.In(loc).AnchoredAt(start)
	out := bufio.NewWriter(c.App.Writer)
	for range count {
		next, ok := s.Next(from)
		if !ok {
			break
		}
		fmt.Fprintln(out, next.Format(fireTimeLayout))
		from = next
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
