-- pgjobs status: who reads and what it may see. Returns the session's role, whether it is a
-- superuser (the views show it every role's jobs, runs and tasks), whether it may read the leader
-- lease (pgjobs.pgj_leader_ is hidden from PUBLIC), and the snapshot's clock, which every age of the
-- status is counted from.
SELECT current_user::text, r.rolsuper,
       pg_catalog.has_table_privilege('pgjobs.pgj_leader_', 'SELECT'),
       pg_catalog.now()
FROM pg_catalog.pg_roles r
WHERE r.rolname = current_user
