package sqlschema_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// proofCall is the statement of TaskProofSQL for the session of backend pid, without the line
// break and semicolon that start it.
func proofCall(epoch, id int64, attempt int, pid uint32, key []byte) string {
	return strings.TrimPrefix(sqlschema.TaskProofSQL(epoch, id, attempt, pid, key), "\n;")
}

// TestTaskProof: a task's input and its proof commit together. As ordinary LOGIN roles, bob
// cannot prove alice's attempt (a forged token, another attempt's, another term's) nor read or
// write the keys and proofs; a proven attempt is not put back by a reset but handed over to be
// ended DONE with its output lost; a proof of an attempt that was put back fails, and the input's
// work is rolled back with it; a read-only transaction proves nothing.
func TestTaskProof(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := enabledDatabase(t)
	admin := cluster.Connect(t, db)
	mustExec(t, admin, "CREATE TABLE eff (k int); GRANT ALL ON eff TO PUBLIC")
	alice, bob := cluster.NewRole(t, "alice", db), cluster.NewRole(t, "bob", db)
	asAlice, asBob := cluster.ConnectAs(t, db, alice), cluster.ConnectAs(t, db, bob)
	key := []byte(strings.Repeat("k", 32))
	if err := sqlschema.TaskKey(ctx, admin, 0, key); err != nil {
		t.Fatal(err)
	}
	insert := func(input string) int64 {
		var id int64
		if err := asAlice.QueryRow(ctx, "INSERT INTO task (input) VALUES ($1) RETURNING id", input).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	claim := func(want int64) sqlschema.ClaimedTask {
		claimed, err := sqlschema.TaskClaim(ctx, admin, 0, 8, 7, nil)
		if err != nil || len(claimed) != 1 || claimed[0].ID != want {
			t.Fatalf("claim = %+v, %v; want task %d", claimed, err, want)
		}
		return claimed[0]
	}
	first := claim(insert("SELECT 1"))
	var alicePID, bobPID uint32
	if err := asAlice.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&alicePID); err != nil {
		t.Fatal(err)
	}
	if err := asBob.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&bobPID); err != nil {
		t.Fatal(err)
	}

	forged := make([]byte, 32)
	for _, c := range []struct{ sql, code, text string }{
		{proofCall(0, first.ID, first.Attempt, bobPID, forged), "42501", "not the agent's proof"},
		// A token read from alice's session (pg_stat_activity, a log): it is bound to her backend.
		{proofCall(0, first.ID, first.Attempt, alicePID, key), "42501", "not the agent's proof"},
		// The token of another task: a proof is bound to its task and attempt.
		{strings.Replace(proofCall(0, first.ID+1, first.Attempt, bobPID, key), fmt.Sprintf("(0, %d,", first.ID+1), fmt.Sprintf("(0, %d,", first.ID), 1), "42501", "not the agent's proof"},
		{proofCall(1, first.ID, first.Attempt, bobPID, key), "42501", "not the agent's proof"},
		{"SELECT * FROM pgjobs_agent.task_key", "42501", "permission denied for schema pgjobs_agent"},
		{"SELECT * FROM pgjobs_agent.task_proof", "42501", "permission denied for schema pgjobs_agent"},
		{fmt.Sprintf("INSERT INTO pgjobs_agent.task_proof VALUES (%d, %d)", first.ID, first.Attempt), "42501", "permission denied for schema pgjobs_agent"},
		// The attacker review's lock queue: not even named, so no lock is queued on them.
		{"CREATE RULE r AS ON INSERT TO pgjobs_agent.task_key DO INSTEAD NOTHING", "42501", "permission denied for schema pgjobs_agent"},
		{"DO $$ BEGIN LOCK pgjobs_agent.task_proof; END $$", "42501", "permission denied for schema pgjobs_agent"},
		{"SELECT pgjobs.pgj_task_key_(0, '\\x00')", "42501", "permission denied"},
		{"SELECT * FROM pgjobs.pgj_task_adopt_(0, '{}')", "42501", "permission denied"},
	} {
		wantError(t, asBob, c.sql, c.code, c.text)
	}
	if n := queryString(t, admin, "SELECT count(*)::text FROM pgjobs_agent.task_proof"); n != "0" {
		t.Fatalf("%s proofs after bob's attempts", n)
	}

	// Alice's input commits with its proof: a reset leaves the task, the adoption hands it over.
	mustExec(t, asAlice, "INSERT INTO eff VALUES (1);"+proofCall(0, first.ID, first.Attempt, alicePID, key))
	if n, _, err := sqlschema.TaskReset(ctx, admin, 0, nil); err != nil || n != 0 {
		t.Fatalf("reset = %d, %v; want the proven task left", n, err)
	}
	adopted, err := sqlschema.TaskAdopt(ctx, admin, 0, nil)
	if err != nil || len(adopted) != 1 || adopted[0].ID != first.ID || adopted[0].Attempt != first.Attempt {
		t.Fatalf("adopt = %+v, %v", adopted, err)
	}
	lost, now := "the agent ended", time.Now()
	retry := now.Add(time.Hour)
	if _, err := sqlschema.TaskWrite(ctx, admin, 0, nil, []sqlschema.TaskEnd{{ID: first.ID, Attempt: first.Attempt, Start: now, Stop: now, Error: &lost, RetryAt: &retry}}); err != nil {
		t.Fatal(err)
	}
	if got := queryString(t, asAlice, "SELECT state || ': ' || error FROM task WHERE id = $1", first.ID); got != "DONE: the task's transaction committed, but its output was lost: the agent ended" {
		t.Fatalf("proven task after its end: %q", got)
	}
	if n := queryString(t, admin, "SELECT count(*)::text FROM pgjobs_agent.task_proof"); n != "0" {
		t.Fatalf("%s proofs left after the end", n)
	}

	// An attempt put back meanwhile: its proof fails and the input's work is rolled back.
	second := claim(insert("SELECT 2"))
	if n, _, err := sqlschema.TaskReset(ctx, admin, 0, nil); err != nil || n != 1 {
		t.Fatalf("reset = %d, %v; want the claimed task put back", n, err)
	}
	wantError(t, asAlice, "INSERT INTO eff VALUES (2);"+proofCall(0, second.ID, second.Attempt, alicePID, key), "PGJ02", "no longer running")
	if n := queryString(t, admin, "SELECT count(*)::text FROM eff WHERE k = 2"); n != "0" {
		t.Fatalf("the work of a refused proof committed (%s rows)", n)
	}

	// A transaction that wrote nothing has nothing to prove; one that wrote, then turned read-only,
	// cannot commit its work without its proof (the attacker review's case).
	third := claim(second.ID)
	mustExec(t, asAlice, "SELECT 3;"+proofCall(0, third.ID, third.Attempt, alicePID, key))
	if n := queryString(t, admin, "SELECT count(*)::text FROM pgjobs_agent.task_proof"); n != "0" {
		t.Fatalf("a transaction that wrote nothing left %s proofs", n)
	}
	wantError(t, asAlice, "INSERT INTO eff VALUES (3); SET TRANSACTION READ ONLY;"+proofCall(0, third.ID, third.Attempt, alicePID, key), "25006", "read-only transaction")
	if n := queryString(t, admin, "SELECT count(*)::text FROM eff WHERE k = 3"); n != "0" {
		t.Fatalf("the work of a transaction without its proof committed (%s rows)", n)
	}
}
