package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/pgjobs/pgjobs/config"
	"github.com/pgjobs/pgjobs/internal/printable"
	"github.com/pgjobs/pgjobs/sqlschema"
	"github.com/urfave/cli/v2"
)

// statusConnectTimeout is the longest pgjobs status waits for a database to accept a session, and
// statusReadTimeout the longest it then reads it; past either it goes on without it.
const (
	statusConnectTimeout = 10 * time.Second
	statusReadTimeout    = 20 * time.Second
)

// statusParallel is how many databases pgjobs status reads at once: a few unreachable ones do
// not hold the others up for their timeouts each.
const statusParallel = 8

func statusCommand() *cli.Command {
	return command(&cli.Command{
		Name:      "status",
		Usage:     "report on every configured database: its agent, jobs, runs, failures and tasks; exit 1 when one needs attention",
		UsageText: "pgjobs status [--config FILE] [--json]",
		Description: `Reads every database of the configuration, whether or not the agent runs on this host, each
as its row's user (the agent's role), and prints one block per database: whether pgjobs is enabled
and its schema version, the active agent (the holder of the leader lease) and since when it leads,
the standby agents, the jobs and the next fire, the runs that ended in the last 24 hours by status,
the failures (error, cancelled, abandoned) of the last hour, the last failure with its message (the
next fire's and the last failure's jobs with their owners),
the tasks by state and how long the oldest waiting task has waited. Times are RFC 3339 with the
age in brackets. A role that is no superuser sees its own jobs, runs and tasks only; a role that
may not read the lease (superusers and the agents' roles may) or other roles' sessions (without
pg_read_all_stats) gets "unknown" for the agent or the standbys.

Each database gets 10 s to accept a session and 20 s to be read, several at once; one that is
unreachable or cannot be read gets a block with the error, and the others are read all the same. A database without the pgjobs schema
says "not enabled"; a schema older than this pgjobs is read as far as it goes, with the command
that upgrades it.

It serves as a check command. Exit status: 0 when every database was read, none had a failure
in the last hour and each with jobs that are not paused or waiting tasks has an active agent (a
database that is not enabled, a missed fire or an older failure does not count); 1 when a database
is unreachable or unreadable, had a failure in the last hour, or has jobs or waiting tasks and no
active agent (when the role may read the lease), with a one-line summary of why on stderr; 1 too when the configuration file is missing or invalid. A
configuration without databases has nothing to check: it says so and exits 0. --json prints an
array with one object per database (snake_case fields, times in RFC 3339, ages in seconds, the
reasons for exit 1 in "problems"), with the same exit status.

Examples:
   pgjobs status
   pgjobs status --config /etc/pgjobs/pgjobs.conf --json
   pgjobs status >/dev/null 2>&1 || echo "pgjobs needs attention"`,
		Flags:  []cli.Flag{configFlag(), &cli.BoolFlag{Name: "json", Usage: "print a JSON array, one object per database"}},
		Action: showStatus,
	})
}

// dbStatus is what pgjobs status found of one configured database.
type dbStatus struct {
	row         config.Database
	status      sqlschema.Status
	unreachable error // no session could be opened
	unreadable  error // a session was opened, but the status could not be read
}

// problems returns the reasons this database makes pgjobs status exit 1, none when it is well.
func (d dbStatus) problems() []string {
	switch {
	case d.unreachable != nil:
		return []string{"unreachable"}
	case d.unreadable != nil:
		return []string{"unreadable"}
	}
	var found []string
	st := d.status
	if l := st.Leader; st.Enabled && l.Readable && l.Tracked && !l.Active && (st.Jobs > st.PausedJobs || (st.Tasks != nil && st.Tasks.Waiting > 0)) {
		found = append(found, "no agent is active: its jobs and tasks do not run")
	}
	if n := st.Runs.FailuresLastHour; n > 0 {
		found = append(found, fmt.Sprintf("%d %s in the last hour", n, plural(n, "failure", "failures")))
	}
	return found
}

func showStatus(c *cli.Context) error {
	f, err := loadConfig(c)
	if err != nil {
		return err
	}
	rows := f.Databases()
	statuses := readStatuses(c.Context, rows)
	if c.Bool("json") {
		if err := printJSON(c.App.Writer, statusDocument(statuses)); err != nil {
			return err
		}
	} else {
		if len(rows) == 0 {
			fmt.Fprintf(c.App.Writer, "no databases configured in %s: nothing to check\n", f.Path())
			return nil
		}
		for i, d := range statuses {
			if i > 0 {
				fmt.Fprintln(c.App.Writer)
			}
			printStatus(c.App.Writer, d)
		}
	}
	var reasons []string
	for _, d := range statuses {
		if p := d.problems(); len(p) > 0 {
			reasons = append(reasons, fmt.Sprintf("database %d (%s): %s", d.row.ID, d.row.Target(), strings.Join(p, ", ")))
		}
	}
	if len(reasons) > 0 {
		return fmt.Errorf("status: %d of %d %s %s: %s", len(reasons), len(statuses), plural(len(statuses), "database", "databases"),
			plural(len(reasons), "needs attention", "need attention"), strings.Join(reasons, "; "))
	}
	if !c.Bool("json") {
		fmt.Fprintf(c.App.Writer, "\nok: %d %s read, none with a failure in the last hour\n", len(statuses), plural(len(statuses), "database", "databases"))
	}
	return nil
}

// readStatuses reads the databases, statusParallel at a time, and returns their statuses in the
// order of rows.
func readStatuses(ctx context.Context, rows []config.Database) []dbStatus {
	out := make([]dbStatus, len(rows))
	slots := make(chan struct{}, statusParallel)
	var wg sync.WaitGroup
	for i, row := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			out[i] = readStatus(ctx, row)
		}()
	}
	wg.Wait()
	return out
}

// readStatus connects to one database, as its row's user, and reads its status.
func readStatus(ctx context.Context, row config.Database) dbStatus {
	d := dbStatus{row: row}
	connectCtx, cancel := context.WithTimeout(ctx, statusConnectTimeout)
	defer cancel()
	conn, err := connect(connectCtx, row)
	if err != nil {
		d.unreachable = err
		return d
	}
	readCtx, cancelRead := context.WithTimeout(ctx, statusReadTimeout)
	defer cancelRead()
	defer conn.Close(readCtx)
	if d.status, err = sqlschema.StatusRead(readCtx, conn); err != nil {
		d.unreadable = fmt.Errorf("%s: %w", row.Target(), err)
	}
	return d
}

// printStatus prints the block of one database: aligned "key: value" lines.
func printStatus(w io.Writer, d dbStatus) {
	s := d.status
	line := func(key, format string, args ...any) {
		fmt.Fprintf(w, "  %-16s %s\n", key+":", fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(w, "database %d: %s as %s\n", d.row.ID, d.row.Target(), d.row.ResolvedUser())
	switch {
	case d.unreachable != nil:
		line("error", "unreachable: %s", printable.String(oneLine(d.unreachable)))
		return
	case d.unreadable != nil:
		line("error", "unreadable: %s", printable.String(oneLine(d.unreadable)))
		return
	case !s.Enabled:
		line("enabled", "no: not enabled (the database has no pgjobs schema; pgjobs enabledb -d %s enables it)", shellWord(d.row.Name))
		return
	}
	line("enabled", "yes, schema version %d%s", s.Version, versionNote(s.Version, ": "))
	if !s.Superuser {
		line("role", "%s, no superuser: the jobs, runs and tasks below are its own", printable.String(s.Role))
	}
	line("active agent", "%s", leaderText(s))
	line("standbys", "%s", standbysText(s))
	jobs := fmt.Sprint(s.Jobs)
	if s.PausedJobs > 0 {
		jobs += fmt.Sprintf(" (%d paused)", s.PausedJobs)
	}
	line("jobs", "%s", jobs)
	if s.NextFire != nil && s.NextJob != nil {
		line("next fire", "%s at %s", jobOf(*s.NextJob, s.NextOwner), timeAge(*s.NextFire, s.Now))
	} else {
		line("next fire", "none planned")
	}
	r := s.Runs
	line("runs (24 h)", "%d ok, %d error, %d cancelled, %d abandoned, %d skipped, %d missed; %d running now",
		r.OK, r.Error, r.Cancelled, r.Abandoned, r.Skipped, r.Missed, r.Running)
	line("failures (1 h)", "%d", r.FailuresLastHour)
	line("last failure", "%s", failureText(s))
	tasks, waiting := tasksText(s)
	line("tasks", "%s", tasks)
	if waiting != "" {
		line("waiting tasks", "%s", waiting)
	}
}

// versionNote says, after sep, what to do about a schema of another version than this pgjobs'.
func versionNote(v int, sep string) string {
	if v == sqlschema.Latest() {
		return ""
	}
	return sep + (&sqlschema.VersionError{Installed: v, Known: sqlschema.Latest()}).Error()
}

// leaderText tells the active agent, or why there is none or it is unknown.
func leaderText(s sqlschema.Status) string {
	l := s.Leader
	last := "no agent has ever led"
	if l.Agent != nil {
		last = "last: " + printable.String(*l.Agent)
		if l.Since != nil {
			last += ", which took the lead at " + timeAge(*l.Since, s.Now)
		}
	}
	switch {
	case !l.Readable:
		return fmt.Sprintf("unknown: %s may not read the leader lease pgjobs.pgj_leader_ (run pgjobs status as a superuser or as the agent's role)", printable.String(s.Role))
	case !l.Tracked:
		return fmt.Sprintf("unknown: schema version %d does not record the leader's session (%s)", s.Version, last)
	case l.Active:
		text := fmt.Sprintf("%s, session %d", printable.String(deref(l.Agent, "an unnamed agent")), *l.PID)
		if l.Since != nil {
			text += ", since " + timeAge(*l.Since, s.Now)
		}
		return text
	case l.PID != nil:
		return fmt.Sprintf("no active agent: the leader's session %d has ended (%s)", *l.PID, last)
	}
	return fmt.Sprintf("no active agent (%s)", last)
}

// standbysText tells how many standby agents wait, or that it is unknown.
func standbysText(s sqlschema.Status) string {
	if s.Standbys.Hidden > 0 {
		return fmt.Sprintf("unknown (needs pg_read_all_stats: %s may not see what %d agent %s of other roles %s doing)",
			printable.String(s.Role), s.Standbys.Hidden, plural(s.Standbys.Hidden, "session", "sessions"), plural(s.Standbys.Hidden, "is", "are"))
	}
	return fmt.Sprint(s.Standbys.Count)
}

// jobOf names a job and, when known, its owner, each quoted as PostgreSQL quotes identifiers, as
// the agent's log does ("Backup" of "alice"): a superuser's status tells every role's jobs, and a
// name holding " (owner alice) at" must not read as another's.
func jobOf(job string, owner *string) string {
	if owner == nil {
		return printable.String(pgx.Identifier{job}.Sanitize())
	}
	return printable.String(pgx.Identifier{job}.Sanitize() + " of " + pgx.Identifier{*owner}.Sanitize())
}

// failureText tells the last failure: job, status, when, SQLSTATE and message on one line.
func failureText(s sqlschema.Status) string {
	f := s.LastFailure
	if f == nil {
		return "none"
	}
	text := jobOf(f.Job, &f.Owner) + " " + f.Status
	if f.Finished != nil {
		text += " at " + timeAge(*f.Finished, s.Now)
	}
	message := orDash(f.Message)
	if f.SQLState != nil {
		message = *f.SQLState + ": " + message
	}
	return text + ": " + printable.String(strings.Join(strings.Fields(message), " "))
}

// tasksText tells the tasks by state and, when tasks wait, how many and since when.
func tasksText(s sqlschema.Status) (tasks, waiting string) {
	t := s.Tasks
	if t == nil {
		return fmt.Sprintf("none (schema version %d has no tasks)", s.Version), ""
	}
	var parts []string
	for _, state := range sqlschema.TaskStates {
		if n := t.ByState[state]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
		}
	}
	if len(parts) == 0 {
		return "none", ""
	}
	if t.OldestWaiting == nil {
		return strings.Join(parts, ", "), "none"
	}
	return strings.Join(parts, ", "), fmt.Sprintf("%d, the oldest planned for %s", t.Waiting, timeAge(*t.OldestWaiting, s.Now))
}

// timeAge prints t in RFC 3339, in the local zone, with its distance from now: "(3 min ago)",
// "(in 42 s)".
func timeAge(t, now time.Time) string {
	if t.After(now) {
		return fmt.Sprintf("%s (in %s)", t.Local().Format(fireTimeLayout), roughly(t.Sub(now)))
	}
	return fmt.Sprintf("%s (%s ago)", t.Local().Format(fireTimeLayout), roughly(now.Sub(t)))
}

// roughly prints a duration in its largest whole unit: 42 s, 3 min, 5 h, 12 days.
func roughly(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days", int(d/(24*time.Hour)))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func deref(s *string, none string) string {
	if s == nil {
		return none
	}
	return *s
}
