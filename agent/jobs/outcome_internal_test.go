package jobs

import (
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// TestRefusal: a job whose owner was dropped, whose call was never resolved, or whose stored call
// does not name its function as a stored call is written does not run, saying why and how to
// set it right; a job of a stored call runs, its guard given the call's schema and name.
func TestRefusal(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		change    func(s *storedJobFields)
		why, hint string
	}{
		{name: "runs"},
		{name: "owner dropped", change: func(s *storedJobFields) { s.ownerGone = true }, why: "the job's owner alice (role OID 10) was dropped", hint: "a superuser may drop the job"},
		{name: "not resolved", change: func(s *storedJobFields) { s.funcOID = 0 }, why: "was stopped by a pgjobs upgrade", hint: "its owner alice sets the call again"},
		{name: "not qualified", change: func(s *storedJobFields) { s.call = "f()" }, why: `the stored call "f()" does not start with a schema-qualified function name: position 2: want '.' after the schema: the job does not run`, hint: "SELECT pgjobs.pgj_update_job('J', NULL, 'f()', NULL)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := storedJobFields{call: `"My App".run_it(1)`, funcOID: 16384}
			if c.change != nil {
				c.change(&f)
			}
			s := stored(1, "J", "alice", "D 01")
			s.Call, s.FuncOID = f.call, f.funcOID
			if f.ownerGone {
				s.Owner = nil
			}
			j, err := storedJob(s, time.UTC, planT0)
			if err != nil {
				t.Fatal(err)
			}
			why, hint := refusal(j)
			if !strings.Contains(why, c.why) || !strings.Contains(hint, c.hint) || (c.why == "") != (why == "") {
				t.Fatalf("refusal = %q, %q; want %q, %q", why, hint, c.why, c.hint)
			}
			if want := (sqlschema.StoredCall{Schema: "My App", Name: "run_it", Castable: true}); c.why == "" && (j.stored != want || j.funcOID != 16384) {
				t.Fatalf("the guard's arguments: %+v, %d", j.stored, j.funcOID)
			}
		})
	}
}

// storedJobFields are what TestRefusal changes of a stored job.
type storedJobFields struct {
	call      string
	funcOID   uint32
	ownerGone bool
}
