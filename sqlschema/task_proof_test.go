package sqlschema_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/pgjobs/pgjobs/sqlschema"
)

// proofCall is the CALL of TaskProofSQL, without the line break and semicolon that start it.
func proofCall(epoch, id int64, attempt int, key []byte) string {
	return strings.TrimPrefix(sqlschema.TaskProofSQL(epoch, id, attempt, key), "\n;")
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
		claimed, err := sqlschema.TaskClaim(ctx, admin, 0, 8, 7)
		if err != nil || len(claimed) != 1 || claimed[0].ID != want {
			t.Fatalf("claim = %+v, %v; want task %d", claimed, err, want)
		}
		return claimed[0]
	}
	first := claim(insert("SELECT 1"))

	forged := make([]byte, 32)
	for _, c := range []struct{ sql, code, text string }{
		{proofCall(0, first.ID, first.Attempt, forged), "42501", "not the agent's proof"},
		// The token of another task: a proof is bound to its task and attempt.
		{strings.Replace(proofCall(0, first.ID+1, first.Attempt, key), fmt.Sprintf("(0, %d,", first.ID+1), fmt.Sprintf("(0, %d,", first.ID), 1), "42501", "not the agent's proof"},
		{proofCall(1, first.ID, first.Attempt, key), "42501", "not the agent's proof"},
		{"SELECT * FROM pgjobs.task_key", "42501", "permission denied"},
		{"SELECT * FROM pgjobs.task_proof", "42501", "permission denied"},
		{fmt.Sprintf("INSERT INTO pgjobs.task_proof VALUES (%d, %d)", first.ID, first.Attempt), "42501", "permission denied"},
		{"SELECT pgjobs.pgj_task_key_(0, '\\x00')", "42501", "permission denied"},
		{"SELECT * FROM pgjobs.pgj_task_adopt_(0, '{}')", "42501", "permission denied"},
	} {
		wantError(t, asBob, c.sql, c.code, c.text)
	}
	if n := queryString(t, admin, "SELECT count(*)::text FROM pgjobs.task_proof"); n != "0" {
		t.Fatalf("%s proofs after bob's attempts", n)
	}

	// Alice's input commits with its proof: a reset leaves the task, the adoption hands it over.
	mustExec(t, asAlice, "INSERT INTO eff VALUES (1);"+proofCall(0, first.ID, first.Attempt, key))
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
	if n := queryString(t, admin, "SELECT count(*)::text FROM pgjobs.task_proof"); n != "0" {
		t.Fatalf("%s proofs left after the end", n)
	}

	// An attempt put back meanwhile: its proof fails and the input's work is rolled back.
	second := claim(insert("SELECT 2"))
	if n, _, err := sqlschema.TaskReset(ctx, admin, 0, nil); err != nil || n != 1 {
		t.Fatalf("reset = %d, %v; want the claimed task put back", n, err)
	}
	wantError(t, asAlice, "INSERT INTO eff VALUES (2);"+proofCall(0, second.ID, second.Attempt, key), "PGJ02", "no longer running")
	if n := queryString(t, admin, "SELECT count(*)::text FROM eff WHERE k = 2"); n != "0" {
		t.Fatalf("the work of a refused proof committed (%s rows)", n)
	}

	// A read-only transaction has nothing to prove.
	third := claim(second.ID)
	mustExec(t, asAlice, "SET TRANSACTION READ ONLY; SELECT 3;"+proofCall(0, third.ID, third.Attempt, key))
	if n := queryString(t, admin, "SELECT count(*)::text FROM pgjobs.task_proof"); n != "0" {
		t.Fatalf("a read-only transaction left %s proofs", n)
	}
}
