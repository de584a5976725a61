-- Records the key $2 of the term of leader epoch $1, from which the tokens of its tasks' proofs are
-- derived.
SELECT pgjobs.pgj_task_key_($1, $2)
