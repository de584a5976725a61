-- The tasks of the database by group and state, for the metrics: with, on each row, how long the
-- oldest of its tasks that are due and not started (PLAN, plan passed) has waited, in seconds.
SELECT t."group", t.state::text, count(*),
       coalesce(extract(epoch FROM now() OPERATOR(pg_catalog.-) min(t.plan) FILTER (WHERE t.state = 'PLAN' AND t.plan <= now())), 0)::float8
FROM pgjobs.task t
GROUP BY t."group", t.state
