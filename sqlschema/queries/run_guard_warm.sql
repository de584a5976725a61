-- Run once when an owner session opens, ahead of its runs: the guards of run_guard.sql and of
-- run_view_guard.sql for the session's own role, so that the session has compiled them and cached
-- what they read before the minute, when the runs start. Their verdicts do not count: each run asks
-- again (the view guard here refuses, for a view that is none: it has run all the same).
SELECT pgjobs.pgj_run_check_(r.oid, r.rolname::text, 'pg_catalog.now()'::pg_catalog.regprocedure, 'pg_catalog', 'now', true)
FROM pg_catalog.pg_roles r
WHERE r.rolname OPERATOR(pg_catalog.=) pg_catalog."session_user"();
SELECT pgjobs.pgj_run_view_check_(r.oid, r.rolname::text, 'pgjobs_call_' OPERATOR(pg_catalog.||) r.oid OPERATOR(pg_catalog.||) '.call_')
FROM pg_catalog.pg_roles r
WHERE r.rolname OPERATOR(pg_catalog.=) pg_catalog."session_user"()
