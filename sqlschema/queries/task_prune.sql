-- Deletes at most $1 of the ended tasks older than the task_retention setting; returns how many.
SELECT pgjobs.pgj_task_prune_($1)
