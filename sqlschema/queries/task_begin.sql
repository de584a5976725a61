-- Sent on a task's session as the first statement of the query that holds the task's input (a
-- simple-protocol query: when it fails, nothing of the input runs), with the task's id, its owner's
-- role OID and its timeout in milliseconds written in as numbers.
SELECT pgjobs.pgj_task_begin_(%d, %d, %d);
