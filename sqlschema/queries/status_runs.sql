-- pgjobs status: the runs the caller may see (pgj_runs) that ended within the interval $1 before
-- the snapshot's clock, by status; the failures (error, cancelled, abandoned) that ended within $2;
-- and the runs going on now. Skipped and missed fires end when they are recorded.
SELECT pg_catalog.count(*) FILTER (WHERE r.status = 'ok' AND r.finished > pg_catalog.now() - $1::interval)::int,
       pg_catalog.count(*) FILTER (WHERE r.status = 'error' AND r.finished > pg_catalog.now() - $1::interval)::int,
       pg_catalog.count(*) FILTER (WHERE r.status = 'cancelled' AND r.finished > pg_catalog.now() - $1::interval)::int,
       pg_catalog.count(*) FILTER (WHERE r.status = 'abandoned' AND r.finished > pg_catalog.now() - $1::interval)::int,
       pg_catalog.count(*) FILTER (WHERE r.status = 'skipped' AND r.finished > pg_catalog.now() - $1::interval)::int,
       pg_catalog.count(*) FILTER (WHERE r.status = 'missed' AND r.finished > pg_catalog.now() - $1::interval)::int,
       pg_catalog.count(*) FILTER (WHERE r.status IN ('error', 'cancelled', 'abandoned')
                                     AND r.finished > pg_catalog.now() - $2::interval)::int,
       pg_catalog.count(*) FILTER (WHERE r.status = 'running')::int
FROM pgjobs.pgj_runs r
WHERE r.status = 'running' OR r.finished > pg_catalog.now() - greatest($1::interval, $2::interval)
