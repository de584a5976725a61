-- Sent on a task's session as a query of its own before the task's input, which is sent only when
-- it succeeded, with the task's id, its owner's role OID and its timeout in milliseconds written
-- in as numbers.
SELECT pgjobs.pgj_task_begin_(%d, %d, %d)
