-- pgjobs status, schema version 5 and later: the tasks the caller may see by state, how many wait
-- (PLAN, planned for the snapshot's clock or earlier), and the plan of the oldest that waits.
SELECT pg_catalog.count(*) FILTER (WHERE t.state = 'PLAN')::int,
       pg_catalog.count(*) FILTER (WHERE t.state = 'TAKE')::int,
       pg_catalog.count(*) FILTER (WHERE t.state = 'WORK')::int,
       pg_catalog.count(*) FILTER (WHERE t.state = 'DONE')::int,
       pg_catalog.count(*) FILTER (WHERE t.state = 'FAIL')::int,
       pg_catalog.count(*) FILTER (WHERE t.state = 'STOP')::int,
       pg_catalog.count(*) FILTER (WHERE t.state = 'GONE')::int,
       pg_catalog.count(*) FILTER (WHERE t.state = 'PLAN' AND t.plan <= pg_catalog.now())::int,
       pg_catalog.min(t.plan) FILTER (WHERE t.state = 'PLAN' AND t.plan <= pg_catalog.now())
FROM pgjobs.task t
