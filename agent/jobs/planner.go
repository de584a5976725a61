package jobs

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/pgjobs/pgjobs/agent/agentlog"
	"github.com/pgjobs/pgjobs/sqlschema"
)

// planner keeps each job's next fire. Only the database agent's loop uses it.
type planner struct {
	loc       *time.Location // the zone schedules are read in
	log       *slog.Logger
	anchor    time.Time     // interval schedules count from it
	lateLimit time.Duration // how late a fire of the time no agent could run it may still run
	loaded    bool          // the first load of the term is done
	jobs      map[int]*plannedJob
	order     []int // job ids in load order, for a stable order of fires
}

type plannedJob struct {
	version   string // the job row's version as loaded: a request runs the job only as loaded
	job       *job
	signature string     // what the job's plan depends on: a change replans it
	next      time.Time  // the next fire; zero when none
	recorded  *time.Time // the next fire as the database has it
}

// lateTolerance is how late a fire may still run when a job changes; an older one is not run.
const lateTolerance = time.Second

// dueFire is a fire to run now.
type dueFire struct {
	job *job
	at  time.Time
}

// missedFires are the fires of one job that passed while no agent was active.
type missedFires struct {
	job         *job
	first, last time.Time
	count       int
}

// plansUpdate is what changed in the planned runs, for sqlschema.JobPlan.
type plansUpdate struct {
	ids  []int
	next []*time.Time
}

func newPlanner(loc *time.Location, log *slog.Logger, anchor time.Time, lateLimit time.Duration) *planner {
	return &planner{loc: loc, log: log, anchor: anchor, lateLimit: max(lateLimit, lateTolerance), jobs: map[int]*plannedJob{}}
}

// load replaces the jobs with those stored. An unchanged job keeps its plan; a new or changed one
// is planned from a moment ago (lateTolerance), never again at or before its latest claimed fire.
// At the first load of a term, a job is planned from lateLimit ago, or from when it was made
// (StartSet) when no agent planned it before: the fires that fell due while no agent could run
// them run late, if no agent claimed them.
func (p *planner) load(stored []sqlschema.StoredJob, now time.Time) {
	jobs := make(map[int]*plannedJob, len(stored))
	p.order = p.order[:0]
	for _, s := range stored {
		owner, gone := s.OwnerWas, s.Owner == nil
		if !gone {
			owner = *s.Owner
		}
		var resumed int64
		if s.Resumed != nil {
			resumed = s.Resumed.UnixNano()
		}
		sig := fmt.Sprintf("%s|%s|%s|%d|%v|%d|%v|%d|%v|%q|%d", s.Call, s.View, owner, s.OwnerID, gone, s.FuncOID, s.Startup, s.StartSet.UnixNano(), s.StartSchedule, s.Schedules, resumed)
		if s.StartSchedule != nil {
			sig = fmt.Sprintf("%s|%s", sig, *s.StartSchedule)
		}
		var timeout time.Duration
		if s.Timeout != nil {
			timeout = *s.Timeout
		}
		if old, ok := p.jobs[s.ID]; ok && old.signature == sig {
			old.version = s.Version
			old.job.name, old.job.timeout = s.Name, timeout // a rename or a time limit changes no plan
			jobs[s.ID] = old
			p.order = append(p.order, s.ID)
			continue
		}
		j, err := storedJob(s, p.loc, p.anchor)
		if err != nil {
			p.log.Error(err.Error(), "status", agentlog.StatusStarting)
			continue
		}
		pj := &plannedJob{job: j, signature: sig, recorded: s.NextRun, version: s.Version}
		from := now.Add(-lateTolerance)
		if !p.loaded {
			from = now.Add(-p.lateLimit)
			if s.NextRun == nil && s.LastFire == nil {
				// No agent planned it: made while none was active (the first agent of the
				// database starts after it), it runs the fires since it was made, late; as a new
				// job when the server's clock says it was made later than a moment ago.
				from = notBefore(from, s.StartSet, now)
			}
		}
		if s.Resumed != nil {
			from = notBefore(from, *s.Resumed, now) // a resumed job fires again from then on
		}
		if s.LastFire != nil && s.LastFire.After(from) {
			from = *s.LastFire
		}
		if next, ok := j.nextFire(from); ok {
			pj.next = next
		}
		jobs[s.ID] = pj
		p.order = append(p.order, s.ID)
	}
	p.jobs = jobs
	p.loaded = true
}

// notBefore returns from moved to at when at is later: a time the server's clock gave, taken as a
// moment ago (lateTolerance) when that clock is ahead of the agent's.
func notBefore(from, at, now time.Time) time.Time {
	if recent := now.Add(-lateTolerance); at.After(recent) {
		at = recent
	}
	if at.After(from) {
		return at
	}
	return from
}

// missed returns, per job, the fires that passed before now - lateLimit without being
// claimed: after the latest claimed fire, or else from the fire planned before, and after the job
// was last resumed. The latest claimed fire itself counts when it has no run row, unless
// inFlight(job id, fire) says this agent's run of that fire waits for a session or goes on: its run
// records it.
func (p *planner) missed(now time.Time, inFlight func(id int, at time.Time) bool) []missedFires {
	limit := now.Add(-p.lateLimit)
	var out []missedFires
	for _, id := range p.order {
		j := p.jobs[id].job
		var after time.Time
		switch {
		case j.lastFire != nil:
			after = *j.lastFire
		case j.plannedAt != nil:
			after = j.plannedAt.Add(-time.Nanosecond)
		default:
			continue
		}
		if j.resumed != nil && j.resumed.After(after) {
			after = *j.resumed // the fires of a pause are not missed
		}
		var m missedFires
		if j.lastFire != nil && !j.lastRun && !j.lastFire.After(limit) && (j.resumed == nil || j.lastFire.After(*j.resumed)) && !inFlight(id, *j.lastFire) {
			// Claimed ahead by an agent that stopped before its run was recorded.
			m = missedFires{job: j, first: *j.lastFire, last: *j.lastFire, count: 1}
		}
		for t := after; m.count < 100000; {
			next, ok := j.nextFire(t)
			if !ok || next.After(limit) {
				break
			}
			if m.count == 0 {
				m.first = next
			}
			m.job, m.last, m.count, t = j, next, m.count+1, next
		}
		if m.count > 0 {
			out = append(out, m)
		}
	}
	return out
}

// resume plans again the fires claimed ahead by this agent's term before, with no other agent
// between, that it never fired: those that fell due after now - lateLimit fire at their time (at
// once when it has passed). Older ones are missed's, and claims of jobs gone are dropped.
func (p *planner) resume(claimed map[int]claim, now time.Time) {
	limit := now.Add(-p.lateLimit)
	for id, c := range claimed {
		pj, ok := p.jobs[id]
		if !ok || !c.at.After(limit) || pj.job.resumed != nil && !c.at.After(*pj.job.resumed) {
			delete(claimed, id) // gone, too old, or a fire of a pause the job was resumed from since
			continue
		}
		if pj.next.IsZero() || c.at.Before(pj.next) {
			pj.next = c.at
		}
	}
}

// startupJobs returns the jobs to run when the agent starts.
func (p *planner) startupJobs() []*job {
	var out []*job
	for _, id := range p.order {
		if j := p.jobs[id].job; j.startup {
			out = append(out, j)
		}
	}
	return out
}

// due returns the fires at or before now and plans the next ones. A job whose several fires
// passed (the machine slept) fires once, for the latest.
func (p *planner) due(now time.Time) []dueFire {
	var out []dueFire
	for _, id := range p.order {
		pj := p.jobs[id]
		if pj.next.IsZero() || pj.next.After(now) {
			continue
		}
		at := pj.next
		pj.next = time.Time{}
		for t := at; ; {
			next, ok := pj.job.nextFire(t)
			if !ok {
				break
			}
			if next.After(now) {
				pj.next = next
				break
			}
			at, t = next, next
		}
		out = append(out, dueFire{job: pj.job, at: at})
	}
	return out
}

// changedPlans returns the jobs whose next fire differs from what the database has, and takes
// the new values as recorded.
func (p *planner) changedPlans() plansUpdate {
	var u plansUpdate
	for _, id := range p.order {
		pj := p.jobs[id]
		var next *time.Time
		if !pj.next.IsZero() {
			t := pj.next
			next = &t
		}
		if sameTime(next, pj.recorded) {
			continue
		}
		u.ids = append(u.ids, id)
		u.next = append(u.next, next)
		pj.recorded = next
	}
	return u
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// dueAt returns the jobs whose next fire is at.
func (p *planner) dueAt(at time.Time) []*job {
	var out []*job
	for _, id := range p.order {
		if pj := p.jobs[id]; pj.next.Equal(at) {
			out = append(out, pj.job)
		}
	}
	return out
}

// earliest returns the nearest planned fire.
func (p *planner) earliest() (time.Time, bool) {
	var best time.Time
	for _, pj := range p.jobs {
		if !pj.next.IsZero() && (best.IsZero() || pj.next.Before(best)) {
			best = pj.next
		}
	}
	return best, !best.IsZero()
}

// inTurns orders fires so that their owners take turns: each owner's first fire, then each
// owner's second, and so on, owners in the order of their first fire. One owner's thousands of
// fires at a minute then start no later than their turn; another owner's single fire starts among
// the first.
func inTurns(fires []dueFire) []dueFire {
	var owners []string
	byOwner := map[string][]dueFire{}
	for _, f := range fires {
		if _, ok := byOwner[f.job.owner]; !ok {
			owners = append(owners, f.job.owner)
		}
		byOwner[f.job.owner] = append(byOwner[f.job.owner], f)
	}
	if len(owners) < 2 {
		return fires
	}
	out := make([]dueFire, 0, len(fires))
	for round := 0; len(out) < len(fires); round++ {
		for _, o := range owners {
			if round < len(byOwner[o]) {
				out = append(out, byOwner[o][round])
			}
		}
	}
	return out
}
