-- pgjobs status: the standby agents of the database, the sessions of agents (application_name
-- "pgjobsagent ID") other than the leader's ($1, NULL when none leads) whose last statement was the
-- look at the lease that pings the leader (leader_look.sql): a standby sends it, then waits on
-- LISTEN. The second count is the agents' sessions whose statements the caller may not see
-- (sessions of other roles, without pg_read_all_stats): when there are any, the standbys are unknown.
SELECT pg_catalog.count(*) FILTER (WHERE a.backend_start IS NOT NULL
                                     AND a.pid IS DISTINCT FROM $1::int
                                     AND a.query LIKE '%pg\_notify(''pgjobs\_ping''%')::int,
       pg_catalog.count(*) FILTER (WHERE a.backend_start IS NULL)::int
FROM pg_catalog.pg_stat_activity a
WHERE a.datname = pg_catalog.current_database()
  AND a.application_name ~ '^pgjobsagent [0-9]+$'
  AND a.pid <> pg_catalog.pg_backend_pid()
