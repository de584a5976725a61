-- The leader of epoch $1 gives the lease up (a soft stop, once its runs have ended) and wakes the
-- standbys, which take it at once.
WITH released AS (
    UPDATE pgjobs.pgj_leader_ SET pid = NULL, backend_start = NULL, answered = NULL
    WHERE epoch = $1 RETURNING epoch)
SELECT count(*), (SELECT count(*) FROM (SELECT pg_catalog.pg_notify('pgjobs_leader', '') FROM released) woken)
FROM released
