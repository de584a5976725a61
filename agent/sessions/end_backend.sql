-- Ends, as the run's own role, the backend of a run the agent gave up and cancelled but that still
-- runs: named by its process id $1 and its start $2, so that a process id taken again by another
-- session is never ended.
SELECT pg_catalog.pg_terminate_backend(pid)
FROM pg_catalog.pg_stat_activity
WHERE pid = $1 AND backend_start = $2
