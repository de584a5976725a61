-- pgjobs status, schema version 3 and later: the leader lease. Returns the agent that took it last
-- (NULL when none ever did), when it took it (the lease's since), the leader session's pid and
-- backend_start (NULL once the agent gave the lease up), and whether that session is connected to
-- this database now (as leader_look.sql tells it: a session of another role shows no
-- backend_start to a role without pg_read_all_stats, and then its pid alone counts).
SELECT l.agent, l.since, l.pid, l.backend_start,
       l.pid IS NOT NULL AND EXISTS (
           SELECT FROM pg_catalog.pg_stat_activity a
           WHERE a.pid = l.pid AND a.datname = pg_catalog.current_database()
             AND (a.backend_start IS NULL OR a.backend_start = l.backend_start))
FROM pgjobs.pgj_leader_ l
