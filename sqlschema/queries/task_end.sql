-- Writes the end of attempt $3 of task $2 for the agent of leader epoch $1: started $4, stopped $5,
-- output $6, error $7; back to PLAN at $8 for a retry, else DONE or FAIL with the next row of a
-- repeating task at $9 and the next task of a negative-max group planned no earlier than $10.
SELECT pgjobs.pgj_task_end_($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
