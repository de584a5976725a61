-- Whether the caller may read the leader lease (superusers, and roles granted SELECT on it).
SELECT pg_catalog.has_table_privilege('pgjobs.pgj_leader_', 'SELECT')
