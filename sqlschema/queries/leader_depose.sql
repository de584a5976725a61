-- Ends the session of a replaced leader (pid $1, started $2) if it is still connected to this
-- database: an agent that was stopped or hung then finds its session gone when it resumes. Returns
-- whether a session was ended.
SELECT COALESCE(bool_or(pg_catalog.pg_terminate_backend(a.pid)), false)
FROM pg_catalog.pg_stat_activity a
WHERE a.pid = $1 AND a.pid <> pg_catalog.pg_backend_pid()
  AND a.datname = pg_catalog.current_database()
  AND (a.backend_start IS NULL OR a.backend_start = $2)
