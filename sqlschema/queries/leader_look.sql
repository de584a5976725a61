-- The leader lease as a standby or a starting agent sees it: the epoch, the leader session and
-- whether it is alive (a session with that pid and start is connected to this database), when the
-- leader last answered a ping, and the server's clock. When $1, it also asks the leader to answer
-- (NOTIFY pgjobs_ping, delivered at commit, after the clock was read).
SELECT l.epoch, l.pid,
    l.pid IS NOT NULL AND EXISTS (
        SELECT FROM pg_catalog.pg_stat_activity a
        WHERE a.pid = l.pid AND a.datname = pg_catalog.current_database()
          AND (a.backend_start IS NULL OR a.backend_start = l.backend_start)),
    l.answered, pg_catalog.clock_timestamp(),
    (SELECT count(*) FROM (SELECT pg_catalog.pg_notify('pgjobs_ping', '') WHERE $1::boolean) ping)
FROM pgjobs.pgj_leader_ l
