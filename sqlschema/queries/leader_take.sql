-- Agent $1 takes the leader lease for this session, if its epoch is still $2 and its last answer
-- still $3 (as the caller saw them: of two standbys one wins, and a leader that answered meanwhile
-- keeps the lead), with a new epoch: the fencing token of its claims.
-- $4 is the IANA zone the agent reads schedules in, kept when PostgreSQL knows it (pgj_jobs computes
-- next runs in it). Returns the new epoch and the session of the leader it replaces (pid,
-- backend_start) and that leader's name (NULL when no agent ever led).
WITH old AS (SELECT pid, backend_start, agent FROM pgjobs.pgj_leader_ WHERE epoch = $2 AND answered IS NOT DISTINCT FROM $3 FOR UPDATE)
UPDATE pgjobs.pgj_leader_ l
SET epoch = l.epoch + 1, agent = $1, since = pg_catalog.clock_timestamp(),
    pid = pg_catalog.pg_backend_pid(),
    backend_start = (SELECT a.backend_start FROM pg_catalog.pg_stat_activity a WHERE a.pid = pg_catalog.pg_backend_pid()),
    answered = pg_catalog.clock_timestamp(),
    zone = (SELECT z.name FROM pg_catalog.pg_timezone_names z WHERE z.name = $4)
FROM old
WHERE l.epoch = $2 AND l.answered IS NOT DISTINCT FROM $3
RETURNING l.epoch, old.pid, old.backend_start, old.agent
