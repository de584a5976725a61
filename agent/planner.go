package agent

import (
	"log/slog"
	"time"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// planner keeps each job's next fire. Only the database agent's loop uses it.
type planner struct {
	opt       Options
	jobs      map[int]*plannedJob
	order     []int     // job ids in load order, for a stable order of fires
	lastCheck time.Time // the last time due() looked: fires up to it are handled
}

type plannedJob struct {
	job      *job
	next     time.Time  // the next fire; zero when none
	recorded *time.Time // the next fire as the database has it
}

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

func newPlanner(opt Options) *planner {
	return &planner{opt: opt, jobs: map[int]*plannedJob{}}
}

// load replaces the jobs with those stored. Jobs it already had keep their place in time; new
// and changed ones are planned from the last check (or now, the first time).
func (p *planner) load(stored []sqlschema.StoredJob, now time.Time, log *slog.Logger) {
	from := p.lastCheck
	if from.IsZero() {
		from = now
		p.lastCheck = now
	}
	jobs := make(map[int]*plannedJob, len(stored))
	p.order = p.order[:0]
	for _, s := range stored {
		j := &job{id: s.ID, name: s.Name, call: s.Call, owner: s.Owner, startup: s.Startup, startSet: s.StartSet, plannedAt: s.NextRun, lastFire: s.LastFire}
		if err := j.parseJobSchedules(s.StartSchedule, s.Schedules, p.opt.Location, p.opt.Start); err != nil {
			log.Error(err.Error(), "status", statusStarting)
			continue
		}
		pj := &plannedJob{job: j, recorded: s.NextRun}
		if next, ok := j.nextFire(from); ok {
			pj.next = next
		}
		jobs[s.ID] = pj
		p.order = append(p.order, s.ID)
	}
	p.jobs = jobs
}

// missed returns, per job, the fires planned before (by this or another agent) that passed
// before now without running.
func (p *planner) missed(now time.Time) []missedFires {
	var out []missedFires
	for _, id := range p.order {
		pj := p.jobs[id]
		planned := pj.job.plannedAt
		if planned != nil && pj.job.lastFire != nil && !planned.After(*pj.job.lastFire) {
			// The planned fire ran; its next plan was not recorded before the agent stopped.
			next, ok := pj.job.nextFire(*pj.job.lastFire)
			planned = &next
			if !ok {
				planned = nil
			}
		}
		if planned == nil || !planned.Before(now.Add(-time.Second)) {
			continue
		}
		m := missedFires{job: pj.job, first: *planned, last: *planned, count: 1}
		for t := *planned; m.count < 100000; m.count++ {
			next, ok := pj.job.nextFire(t)
			if !ok || !next.Before(now) {
				break
			}
			m.last, t = next, next
		}
		out = append(out, m)
	}
	return out
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
	if now.After(p.lastCheck) {
		p.lastCheck = now
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
