-- Ends, as the run's own role, the backend of a run the agent gave up and cancelled but that still
-- runs: named by its process id $1 and its start $2, so that a process id taken again by another
-- session is never ended. The operators are named in pg_catalog: the session is the role's, and
-- its search_path may put an = of its own first (the review's finding: one that is never true kept
-- the backend running).
SELECT pg_catalog.pg_terminate_backend(pid)
FROM pg_catalog.pg_stat_activity
WHERE pid OPERATOR(pg_catalog.=) $1::pg_catalog.int4
  AND backend_start OPERATOR(pg_catalog.=) $2::pg_catalog.timestamptz
