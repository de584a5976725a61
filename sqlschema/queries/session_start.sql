-- The backend pid and backend_start of this session, which identify it while it lives. It runs on
-- a job owner's session, with the owner's search_path: every name is qualified, the operator too.
SELECT a.pid, a.backend_start FROM pg_catalog.pg_stat_activity a
WHERE a.pid OPERATOR(pg_catalog.=) pg_catalog.pg_backend_pid()
