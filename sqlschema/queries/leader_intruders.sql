-- Ends the sessions other than this one whose role may not run the agent (it may not update
-- pgjobs.pgj_leader_: superusers and roles a DBA granted it to may) and that hold or wait for a
-- lock on a pgjobs table that conflicts with the agent's reads and writes: SHARE and stronger. The
-- locks of the pgj_* functions (ROW SHARE for their FOR NO KEY UPDATE and foreign key checks, ROW
-- EXCLUSIVE for their writes), of the views (ACCESS SHARE) and of autovacuum (SHARE UPDATE
-- EXCLUSIVE) are left alone: a user's transaction that called a pgj_* function is not ended. PostgreSQL takes some
-- locks before it checks privileges (CREATE RULE ... TO pgjobs.pgj_fire_ waits for an ACCESS
-- EXCLUSIVE lock), and every statement of the agent would queue behind it.
-- All of them are signalled first, and then waited for, each at most 5 s: a session can take
-- seconds to exit (its temporary tables are dropped before its locks go), and such sessions exit
-- side by side rather than one after the other. Returns each session's pid, role and whether it
-- was signalled.
WITH locking AS (
    SELECT DISTINCT l.pid FROM pg_locks l
    WHERE l.pid <> pg_backend_pid()
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.locktype = 'relation'
      AND l.mode NOT IN ('AccessShareLock', 'RowShareLock', 'RowExclusiveLock', 'ShareUpdateExclusiveLock')
      AND l.relation IN (SELECT c.oid FROM pg_class c WHERE c.relnamespace = 'pgjobs'::regnamespace)
),
-- One row: the aggregate signals every session before the first wait below starts.
signalled AS (
    SELECT array_agg(a.pid) AS pids, array_agg(a.usename::text) AS roles, array_agg(pg_terminate_backend(a.pid)) AS sent
    FROM locking
    JOIN pg_stat_activity a ON a.pid = locking.pid
    WHERE NOT has_table_privilege(a.usesysid, 'pgjobs.pgj_leader_', 'UPDATE')
)
-- The wait: pg_terminate_backend(pid, 5000) returns false, with a warning, for a session that has
-- already exited, so its result is not the answer; IS NOT NULL keeps the call (a volatile
-- function) from being folded away.
SELECT s.pid, s.role, s.sent AND pg_terminate_backend(s.pid, 5000) IS NOT NULL
FROM signalled, unnest(signalled.pids, signalled.roles, signalled.sent) AS s(pid, role, sent)
