-- Ends the one-shot tasks that waited past plan + active, then claims up to $2 ready tasks for the
-- agent of leader epoch $1, no role holding more than $3 at once, not counting the tasks $4 whose
-- run ended (see pgj_task_claim_), with what the agent needs to run each.
SELECT * FROM pgjobs.pgj_task_claim_($1, $2, $3, $4)
