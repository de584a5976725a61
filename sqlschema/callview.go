package sqlschema

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The views of bound calls (schema version 15): a job's call, parsed when it is set into a view of
// its owner's call schema pgjobs_call_<role OID>, which keeps what the call names by OID; since
// version 16 the schema is a superuser's, and the view reads the call's arguments, evaluated when
// it was set, from a table of that schema (pgjobs_call_<role OID>.args_<hex>) only superusers and
// the owner read.

// RunViewGuardSQL is the guard of a call bound to a view, sent in the same round trip right before
// the statement of ViewCallSQL: with the owner's role OID ($1) and name ($2), it fails unless the
// session is of that role, which still exists, may log in and has not expired, and unless view $3
// is the owner's, in the owner's call schema, a superuser's, where no role may create and no other
// role may look.
func RunViewGuardSQL() string { return query("run_view_guard") }

// viewName is the form of the names pgjobs gives the views of calls.
var viewName = regexp.MustCompile(`^pgjobs_call_[0-9]+\.call_[0-9a-f]{32}$`)

// ViewCallSQL returns the statement that runs a call bound to view (StoredJob.View), or an error
// when view is not a name pgjobs gives: the call's value stays in the server (a boolean).
func ViewCallSQL(view string) (string, error) {
	if !viewName.MatchString(view) {
		return "", fmt.Errorf("the view of the job's call %q is not one pgjobs makes (pgjobs_call_OID.call_HEX)", truncate(view, 100))
	}
	schema, name, _ := strings.Cut(view, ".")
	return "SELECT pgj_call_ FROM " + pgx.Identifier{schema, name}.Sanitize(), nil
}

// CallViewsOrphaned returns the views of calls that no job uses: of calls set again since, and of
// dropped jobs; and the tables of arguments that no view reads (after DROP OWNED BY). Runs of a
// job loaded before its call changed may still use them for a while: the agent drops them with
// CallViewsDrop a while later.
func CallViewsOrphaned(ctx context.Context, q DB) ([]string, error) {
	rows, err := q.Query(ctx, query("call_views_orphaned"))
	if err != nil {
		return nil, fmt.Errorf("read the views of former calls: %w", err)
	}
	views, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read the views of former calls: %w", err)
	}
	return views, nil
}

// CallViewsDropMax is how many views one statement of CallViewsDrop drops at most: each drop holds
// its locks to the end of its transaction, in the server's shared lock table.
const CallViewsDropMax = 200

// CallViewsSwept is what CallViewsDrop did with views and tables of former calls: those it set
// aside (Aside) and dropped (Dropped), and those it left for a later drop: because another session
// held it (a run of a former call, or a role's lock) or something of a role's hangs on it (Held),
// because its try failed otherwise (Failed), for its time budget (Deferred), or because a
// transaction open when it was set aside is still open (Waiting).
type CallViewsSwept struct {
	Aside, Dropped, Held, Deferred, Waiting, Failed int
}

func (s *CallViewsSwept) add(o CallViewsSwept) {
	s.Aside += o.Aside
	s.Dropped += o.Dropped
	s.Held += o.Held
	s.Deferred += o.Deferred
	s.Waiting += o.Waiting
	s.Failed += o.Failed
}

// CallViewsDropBudget is how long one CallViewsDrop sends statements: it keeps a session of the
// agent that long, and for its last statement's last try and fixed work, whatever locks roles
// hold (each lock is waited for 1 ms at most).
const CallViewsDropBudget = 5 * time.Second

// setAside is the schema where CallViewsDrop sets former views and tables aside (schema version
// 18), which no role may use.
const setAside = "pgjobs_gone"

// CallViewsDrop drops the views and tables of former calls of views (from CallViewsOrphaned) that no
// job uses now, in two steps (schema version 18): a view or table, once nothing of a role's hangs on
// it, is first set aside into a schema no role may use, where no role can name it or its types any
// more; it is dropped, checked again, by a later statement, once every transaction that was open
// when it was set aside has ended (this call's last statement, when none was, or a later call's).
// Each statement that sets aside has the views of one owner (its call schema), CallViewsDropMax at
// most, so that what a role does to one statement rolls back no other role's; the owners take
// turns, a statement each, starting at any owner (at random, so that no owner comes last every
// round). The last statements (CallViewsDropMax drops each) drop what is due of all that is set
// aside, by this call or before (listed in views as pgjobs_gone.*, which no statement sets aside),
// then the call schemas left empty of roles that have no job. No statement is sent once the drop
// took CallViewsDropBudget, but the last, nor any once ctx ended, the rest left for a later drop. A statement waits for no view or table another
// session holds and stops trying an owner's once its tries took 0.5 s (beyond 10 ms each). A
// statement that fails does not keep the next from running. Only an agent's role may (one that may
// update the leader lease).
func CallViewsDrop(ctx context.Context, q DB, views []string) (CallViewsSwept, error) {
	var swept CallViewsSwept
	if len(views) == 0 {
		return swept, nil
	}
	var failed []error
	began := time.Now()
	var former []string
	for _, v := range views {
		if schema, _, _ := strings.Cut(v, "."); schema != setAside {
			former = append(former, v)
		}
	}
	batches := ownerBatches(former, rand.IntN(len(former)+1)) // a round starts at any owner
	for i, batch := range batches {
		if time.Since(began) >= CallViewsDropBudget || ctx.Err() != nil {
			for _, b := range batches[i:] {
				swept.Deferred += len(b)
			}
			break
		}
		s, err := callViewsSweep(ctx, q, batch, began, false)
		if err != nil {
			// the next statements may set theirs aside: this one's views are tried again later
			failed = append(failed, fmt.Errorf("set aside the views of former calls %s to %s: %w", batch[0], batch[len(batch)-1], err))
		}
		swept.add(s)
	}
	// the drop of what is set aside, CallViewsDropMax a statement, at least one statement
	for more := true; more && ctx.Err() == nil; {
		s, err := callViewsSweep(ctx, q, nil, began, true)
		if err != nil {
			failed = append(failed, fmt.Errorf("drop the views of former calls set aside: %w", err))
			break
		}
		swept.add(s)
		more = s.Dropped > 0 && s.Deferred > 0 && time.Since(began) < CallViewsDropBudget
		if more {
			// the next statement goes over all that is set aside again, and counts these anew
			swept.Deferred -= s.Deferred
			swept.Waiting -= s.Waiting
			swept.Held -= s.Held
			swept.Failed -= s.Failed
		}
	}
	return swept, errors.Join(failed...)
}

// callViewsSweep sends one statement of CallViewsDrop, which began at began: it sets views aside,
// or, when tidy, drops what is set aside.
func callViewsSweep(ctx context.Context, q DB, views []string, began time.Time, tidy bool) (CallViewsSwept, error) {
	var s CallViewsSwept
	left := max(CallViewsDropBudget-time.Since(began), 0)
	err := q.QueryRow(ctx, query("call_views_drop"), views, float64(left)/float64(time.Millisecond), tidy).
		Scan(&s.Aside, &s.Dropped, &s.Held, &s.Deferred, &s.Waiting, &s.Failed)
	return s, err
}

// ownerBatches returns views (schema.name) in batches of one schema each, CallViewsDropMax at
// most, in turns of their schemas: the first batch of each schema, in the order the schemas first
// come starting at the start-th schema (modulo their number), then the second of each, and so on.
func ownerBatches(views []string, start int) [][]string {
	var order []string
	bySchema := make(map[string][]string)
	for _, v := range views {
		schema, _, _ := strings.Cut(v, ".")
		if _, ok := bySchema[schema]; !ok {
			order = append(order, schema)
		}
		bySchema[schema] = append(bySchema[schema], v)
	}
	if len(order) > 0 {
		k := start % len(order)
		order = append(order[k:], order[:k]...)
	}
	var batches [][]string
	for more := true; more; {
		more = false
		for _, schema := range order {
			rest := bySchema[schema]
			if len(rest) == 0 {
				continue
			}
			n := min(len(rest), CallViewsDropMax)
			batches = append(batches, rest[:n])
			bySchema[schema] = rest[n:]
			more = true
		}
	}
	return batches
}
