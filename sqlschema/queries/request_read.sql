-- Request $1 to run a job now as its asker sees it: whether an agent took it, why it did not run,
-- and its run's status and outcome once recorded.
SELECT q.taken, q.error, q.status, q.started, q.finished, q.sqlstate, q.message
FROM pgjobs.pgj_run_requests q
WHERE q.id = $1
