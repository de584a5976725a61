-- Marks claimed tasks ($2 ids, $3 attempts) as running on the sessions $4 (backend pids) since $5,
-- for the agent of leader epoch $1.
SELECT pgjobs.pgj_task_work_($1, $2, $3, $4, $5)
