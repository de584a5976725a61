-- Ends the sessions other than this one that hold or wait for the agent leader lock (see
-- leader_lock.sql) and whose role may not run the agent: only roles that may update
-- pgjobs.pgj_leader_ (superusers and roles a DBA granted it to) may lead. Returns each session's
-- pid, role and whether it was ended (within 5 s).
SELECT l.pid, a.usename::text, pg_terminate_backend(l.pid, 5000)
FROM pg_locks l
JOIN pg_stat_activity a ON a.pid = l.pid
WHERE l.locktype = 'advisory'
  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND l.classid::bigint = ((hashtext('pgjobs agent leader')::bigint >> 32) & 4294967295)
  AND l.objid::bigint = (hashtext('pgjobs agent leader')::bigint & 4294967295)
  AND l.objsubid = 1
  AND l.pid <> pg_backend_pid()
  AND NOT has_table_privilege(a.usesysid, 'pgjobs.pgj_leader_', 'UPDATE')
