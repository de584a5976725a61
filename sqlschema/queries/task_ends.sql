-- Writes the ends of a batch of runs for the agent of leader epoch $1, element i of each array one
-- end: task $2, attempt $3, started $4, stopped $5, output $6, error $7; back to PLAN at $8 for a
-- retry, else DONE or FAIL with the next row of a repeating task at $9 and the next task of a
-- negative-max group planned no earlier than $10; GONE where $11 (not started before its expiry).
-- Returns for each whether it was written (NULL:
-- its row is locked by another session, to be written later).
SELECT id, attempt, written FROM pgjobs.pgj_task_ends_($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
