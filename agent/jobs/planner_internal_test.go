package jobs

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// The planner's decisions, without a database: which fires are due, which were missed, what is
// recorded, and in which order owners' fires start.

var planT0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)

func stored(id int, name, owner string, every ...string) sqlschema.StoredJob {
	return sqlschema.StoredJob{ID: id, Name: name, Call: "public.f()", OwnerID: 10, Owner: &owner, OwnerWas: owner, FuncOID: 16384,
		StartSet: planT0.Add(-time.Hour), Schedules: every}
}

func newTestPlanner(anchor time.Time, lateLimit time.Duration) *planner {
	return newPlanner(time.UTC, slog.New(slog.DiscardHandler), anchor, lateLimit)
}

func fireNames(fires []dueFire) string {
	var out []string
	for _, f := range fires {
		out = append(out, f.job.name+"@"+f.at.Format("15:04:05"))
	}
	return strings.Join(out, ",")
}

func TestPlannerDue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		jobs []sqlschema.StoredJob
		now  time.Time // of the load; due is asked at each of at
		at   []time.Time
		want []string // the fires due at each
	}{
		{
			name: "a minute schedule fires at each minute, not before",
			jobs: []sqlschema.StoredJob{stored(1, "A", "alice", "D 01"), stored(2, "B", "alice", "D 02")},
			now:  planT0,
			at:   []time.Time{planT0.Add(59 * time.Second), planT0.Add(time.Minute), planT0.Add(2 * time.Minute)},
			want: []string{"", "A@10:01:00", "B@10:02:00"},
		},
		{
			name: "several passed fires of one job fire once, for the latest",
			jobs: []sqlschema.StoredJob{stored(1, "Every", "alice", "I 0:01")},
			now:  planT0,
			at:   []time.Time{planT0.Add(3*time.Minute + time.Second)},
			want: []string{"Every@10:03:00"},
		},
		{
			name: "an interval counts from the anchor",
			jobs: []sqlschema.StoredJob{stored(1, "Every", "alice", "I 0:05")},
			now:  planT0.Add(30 * time.Second),
			at:   []time.Time{planT0.Add(5 * time.Minute), planT0.Add(5*time.Minute + 30*time.Second)},
			want: []string{"", "Every@10:05:30"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestPlanner(tt.now, 30*time.Second)
			p.load(tt.jobs, tt.now)
			for i, at := range tt.at {
				if got := fireNames(p.due(at)); got != tt.want[i] {
					t.Errorf("due(%s) = %q, want %q", at.Format("15:04:05"), got, tt.want[i])
				}
			}
		})
	}
}

// At the first load of a term, a fire that passed at most late_limit ago runs late; older ones
// are missed, once per job, and counted.
func TestPlannerFirstLoadOfATerm(t *testing.T) {
	t.Parallel()
	planned := planT0.Add(-10 * time.Minute)
	j := stored(1, "Minutely", "alice", "I 0:01")
	j.NextRun = &planned
	now := planT0.Add(20 * time.Second)
	p := newTestPlanner(planT0.Add(-time.Hour), 30*time.Second)
	p.load([]sqlschema.StoredJob{j}, now)
	missed := p.missed(now, func(int, time.Time) bool { return false })
	if len(missed) != 1 || missed[0].count != 10 || !missed[0].first.Equal(planned) || !missed[0].last.Equal(planT0.Add(-time.Minute)) {
		t.Fatalf("missed = %+v, want 10 fires from 09:50 to 09:59", missed)
	}
	if got := fireNames(p.due(now)); got != "Minutely@10:00:00" {
		t.Errorf("due at 10:00:20 = %q, want the fire of 10:00, 20 s late within late_limit", got)
	}
}

// At the first load of a term, a job that no agent planned yet runs its fires since it was made,
// late within late_limit: made a moment before the first agent of its database started, its first
// fire had no record at all (the attacker review). None before its jobstartset runs.
func TestPlannerFirstLoadRunsANewJobsPassedFire(t *testing.T) {
	t.Parallel()
	made := stored(1, "Made", "alice", "I 0:01")
	made.StartSet = planT0.Add(-100 * time.Millisecond)
	late := stored(2, "MadeLate", "alice", "I 0:01")
	late.StartSet = planT0.Add(time.Second) // after its fire of 10:00
	skewed := stored(3, "Skewed", "alice", "I 0:01")
	skewed.StartSet = planT0.Add(time.Hour) // the server's clock is ahead of the agent's
	now := planT0.Add(2 * time.Second)
	p := newTestPlanner(planT0.Add(-time.Hour), 30*time.Second)
	p.load([]sqlschema.StoredJob{made, late, skewed}, now)
	if got := fireNames(p.due(now)); got != "Made@10:00:00" {
		t.Errorf("due at 10:00:02 = %q, want the fire of 10:00 of the job made before it, 2 s late", got)
	}
	if missed := p.missed(now, func(int, time.Time) bool { return false }); len(missed) != 0 {
		t.Errorf("missed = %+v, want none: no agent planned these jobs", missed)
	}
	if got := fireNames(p.due(planT0.Add(time.Minute))); got != "Made@10:01:00,MadeLate@10:01:00,Skewed@10:01:00" {
		t.Errorf("due at 10:01 = %q, want the next fire of each", got)
	}
}

// At the first load of a term, a job resumed while no agent was active fires again from its resume
// on, planned before or not: none of the fires of its pause runs late or is missed (the review of
// the change above).
func TestPlannerFirstLoadAfterAResume(t *testing.T) {
	t.Parallel()
	resumed := planT0.Add(time.Second)
	fresh := stored(1, "Fresh", "alice", "I 0:01")
	fresh.Resumed = &resumed
	planned := planT0.Add(-10 * time.Minute)
	old := stored(2, "Old", "alice", "I 0:01")
	old.NextRun, old.Resumed = &planned, &resumed
	now := planT0.Add(2 * time.Second)
	p := newTestPlanner(planT0.Add(-time.Hour), 30*time.Second)
	p.load([]sqlschema.StoredJob{fresh, old}, now)
	if got := fireNames(p.due(now)); got != "" {
		t.Errorf("due at 10:00:02 = %q, want none: the fire of 10:00 came before the resume", got)
	}
	if missed := p.missed(now, func(int, time.Time) bool { return false }); len(missed) != 0 {
		t.Errorf("missed = %+v, want none: the fires of a pause are not missed", missed)
	}
	if got := fireNames(p.due(planT0.Add(time.Minute))); got != "Fresh@10:01:00,Old@10:01:00" {
		t.Errorf("due at 10:01 = %q, want the first fire after the resume of each", got)
	}
}

// A job changed while the agent runs is planned from a moment ago, never at or before its latest
// claimed fire; an unchanged job keeps its plan through a reload.
func TestPlannerReload(t *testing.T) {
	t.Parallel()
	p := newTestPlanner(planT0, 30*time.Second)
	p.load([]sqlschema.StoredJob{stored(1, "A", "alice", "D 01")}, planT0)
	if next, ok := p.earliest(); !ok || !next.Equal(planT0.Add(time.Minute)) {
		t.Fatalf("earliest = %s %v, want 10:01", next, ok)
	}
	if u := p.changedPlans(); len(u.ids) != 1 || !u.next[0].Equal(planT0.Add(time.Minute)) {
		t.Fatalf("changed plans = %+v, want job 1 at 10:01", u)
	}
	if u := p.changedPlans(); len(u.ids) != 0 {
		t.Fatalf("changed plans again = %+v, want none", u)
	}
	renamed := stored(1, "Renamed", "alice", "D 01")
	p.load([]sqlschema.StoredJob{renamed}, planT0.Add(10*time.Second))
	if u := p.changedPlans(); len(u.ids) != 0 {
		t.Errorf("a rename changed the plan: %+v", u)
	}
	claimed := planT0.Add(time.Minute)
	changed := stored(1, "Renamed", "alice", "D 01", "D 30")
	changed.LastFire = &claimed
	p.load([]sqlschema.StoredJob{changed}, planT0.Add(time.Minute+time.Second))
	if next, ok := p.earliest(); !ok || !next.Equal(planT0.Add(30*time.Minute)) {
		t.Errorf("earliest after a change past a claimed fire = %s, want 10:30", next)
	}
}

func TestInTurns(t *testing.T) {
	t.Parallel()
	fire := func(name, owner string) dueFire { return dueFire{job: &job{name: name, owner: owner}, at: planT0} }
	tests := []struct {
		name  string
		fires []dueFire
		want  string
	}{
		{"one owner keeps its order", []dueFire{fire("a1", "alice"), fire("a2", "alice")}, "a1,a2"},
		{"a single fire of another owner comes second", []dueFire{fire("a1", "alice"), fire("a2", "alice"), fire("a3", "alice"), fire("b1", "bob")}, "a1,b1,a2,a3"},
		{"owners alternate", []dueFire{fire("a1", "alice"), fire("a2", "alice"), fire("b1", "bob"), fire("c1", "carol"), fire("b2", "bob")}, "a1,b1,c1,a2,b2"},
		{"none", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []string
			for _, f := range inTurns(tt.fires) {
				got = append(got, f.job.name)
			}
			if strings.Join(got, ",") != tt.want {
				t.Errorf("inTurns = %s, want %s", strings.Join(got, ","), tt.want)
			}
		})
	}
}

// TestPlannerResume: the fires a term of this agent claimed ahead and never fired fire in the
// next term, at their time, when they fell due after now - late_limit; older ones are left to
// missed, and the claims of jobs gone are dropped.
func TestPlannerResume(t *testing.T) {
	t.Parallel()
	at01 := planT0.Add(time.Minute)
	tests := []struct {
		name    string
		now     time.Time
		claimed map[int]claim
		due     time.Time // when due is asked
		want    string
		kept    int        // claims left
		resumed *time.Time // when the job was resumed, if it was
	}{
		{"a claim ahead whose fire is still to come fires at its time", planT0.Add(59 * time.Second),
			map[int]claim{1: {at: at01}}, at01, "A@10:01:00", 1, nil},
		{"a claim whose fire passed within late_limit fires at once", at01.Add(10 * time.Second),
			map[int]claim{1: {at: at01}}, at01.Add(10 * time.Second), "A@10:01:00", 1, nil},
		{"a claim older than late_limit is left to missed", at01.Add(31 * time.Second),
			map[int]claim{1: {at: at01}}, at01.Add(31 * time.Second), "", 0, nil},
		{"the claim of a job gone is dropped", planT0.Add(59 * time.Second),
			map[int]claim{9: {at: at01}}, at01, "", 0, nil},
		{"the claim of a fire of a pause the job was resumed from since is dropped", at01.Add(10 * time.Second),
			map[int]claim{1: {at: at01}}, at01.Add(10 * time.Second), "", 0, ptr(at01.Add(5 * time.Second))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestPlanner(planT0, 30*time.Second)
			lastFire := at01 // the claim is in pgj_fire_: the load plans after it
			s := stored(1, "A", "alice", "D 01")
			s.LastFire, s.Resumed = &lastFire, tt.resumed
			p.load([]sqlschema.StoredJob{s}, tt.now)
			p.resume(tt.claimed, tt.now)
			if got := fireNames(p.due(tt.due)); got != tt.want {
				t.Errorf("due at %s = %q, want %q", tt.due.Format(time.TimeOnly), got, tt.want)
			}
			if len(tt.claimed) != tt.kept {
				t.Errorf("claims left %v, want %d", tt.claimed, tt.kept)
			}
		})
	}
}

// TestPlannerMissedLeavesAFireInFlight: a fire claimed and never recorded, older than late_limit,
// is missed unless this agent's run of that very fire waits for a session or goes on; a run of
// another fire of the job does not hold it back (found by the code review).
func TestPlannerMissedLeavesAFireInFlight(t *testing.T) {
	t.Parallel()
	at01 := planT0.Add(time.Minute)
	now := at01.Add(40 * time.Second)
	tests := []struct {
		name     string
		inFlight func(int, time.Time) bool
		want     int // missed fires
	}{
		{"no run in flight", func(int, time.Time) bool { return false }, 1},
		{"the run of 10:01 waits for a session", func(id int, at time.Time) bool { return id == 1 && at.Equal(at01) }, 0},
		{"only the run of 10:00 goes on", func(id int, at time.Time) bool { return id == 1 && at.Equal(planT0) }, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newTestPlanner(planT0, 30*time.Second)
			lastFire := at01
			s := stored(1, "A", "alice", "D 01")
			s.LastFire = &lastFire
			p.load([]sqlschema.StoredJob{s}, now)
			got := 0
			for _, m := range p.missed(now, tt.inFlight) {
				got += m.count
			}
			if got != tt.want {
				t.Errorf("missed %d fires, want %d", got, tt.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
