-- Deletes at most $1 of the runs that ended longer ago than the run_retention setting, the oldest
-- first, and returns how many: the agent repeats it until a batch deletes fewer, so that however
-- many runs have to go (a month of a busy database's minutely jobs is millions), no statement
-- holds the agent's session for long or runs into its statement_timeout.
DELETE FROM pgjobs.pgj_run_
WHERE runid = ANY (ARRAY(
    SELECT runid FROM pgjobs.pgj_run_
    WHERE runfinished < now() - coalesce((SELECT value::interval FROM pgjobs.pgj_setting_ WHERE name = 'run_retention'), '30 days')
    ORDER BY runfinished
    LIMIT $1))
