-- The server's time, and when the agent must look at the tasks again at the latest (NULL: only when
-- notified or when one of its runs ends).
SELECT now(), plan, expiry FROM pgjobs.pgj_task_next_()
