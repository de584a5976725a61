-- Run once when an owner session opens, ahead of its runs: the guard of run_guard.sql for the
-- session's own role, so that the session has compiled it and cached what it reads before the
-- minute, when the runs start. Its verdict does not count: each run asks again.
SELECT pgjobs.pgj_run_check_(r.oid, r.rolname::text, 'pg_catalog.now()'::pg_catalog.regprocedure, 'pg_catalog', 'now', true)
FROM pg_catalog.pg_roles r
WHERE r.rolname OPERATOR(pg_catalog.=) pg_catalog."session_user"()
