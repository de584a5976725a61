-- pgjobs status: the jobs the caller may see (pgj_jobs), how many are paused (the view has paused
-- from schema version 3: before, none is), and the next fire: its job, the job's owner and its time
-- (NULL when no job is planned).
WITH j AS MATERIALIZED (
    SELECT v.name, v.owner::text AS owner, v.next_run, coalesce((pg_catalog.to_jsonb(v) ->> 'paused')::boolean, false) AS paused
    FROM pgjobs.pgj_jobs v
)
SELECT pg_catalog.count(*)::int,
       pg_catalog.count(*) FILTER (WHERE j.paused)::int,
       (pg_catalog.array_agg(j.name ORDER BY j.next_run, j.name) FILTER (WHERE j.next_run IS NOT NULL))[1],
       (pg_catalog.array_agg(j.owner ORDER BY j.next_run, j.name) FILTER (WHERE j.next_run IS NOT NULL))[1],
       pg_catalog.min(j.next_run)
FROM j
