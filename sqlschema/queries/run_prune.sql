-- Deletes the agent's state of dropped jobs, answered requests to run a job now older than the
-- run retention (refused ones older than a day), and caller stamps left by roles that inserted them
-- without calling a pgj_* function (see 002_0_owner.sql): those a role holds locked in an open
-- transaction are left for the next prune, so that no role can keep the stamps from being pruned.
-- The old runs go in batches, run_prune_batch.sql.
WITH fires AS (
    DELETE FROM pgjobs.pgj_fire_ f WHERE NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobid = f.firejobid)
), requests AS (
    -- requests to run a job now, answered and older than the run retention, as their runs; refused
    -- ones (no run) after a day
    DELETE FROM pgjobs.pgj_request_ q
    WHERE q.reqtaken IS NOT NULL
      AND q.reqat < now() - CASE WHEN q.reqerror IS NOT NULL AND NOT EXISTS (SELECT FROM pgjobs.pgj_run_ r WHERE r.runrequest = q.reqid)
                                 THEN interval '1 day' -- refused: nothing ran
                                 ELSE coalesce((SELECT value::interval FROM pgjobs.pgj_setting_ WHERE name = 'run_retention'), '30 days') END
)
DELETE FROM pgjobs.pgj_caller_
WHERE ctid = ANY (ARRAY(SELECT ctid FROM pgjobs.pgj_caller_ WHERE stamped < now() - interval '1 hour'
                        FOR UPDATE SKIP LOCKED))
