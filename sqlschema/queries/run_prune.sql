-- Deletes the runs that ended longer ago than the run_retention setting, the agent's state of
-- dropped jobs, and caller stamps left by roles that inserted them without calling a pgj_*
-- function (see 002_0_owner.sql): those a role holds locked in an open transaction are left for
-- the next prune, so that no role can keep the runs from being pruned. Returns the runs deleted.
WITH fires AS (
    DELETE FROM pgjobs.pgj_fire_ f WHERE NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobid = f.firejobid)
), stamps AS (
    DELETE FROM pgjobs.pgj_caller_
    WHERE ctid = ANY (ARRAY(SELECT ctid FROM pgjobs.pgj_caller_ WHERE stamped < now() - interval '1 hour'
                            FOR UPDATE SKIP LOCKED))
)
DELETE FROM pgjobs.pgj_run_
WHERE runfinished < now() - coalesce((SELECT value::interval FROM pgjobs.pgj_setting_ WHERE name = 'run_retention'), '30 days')
