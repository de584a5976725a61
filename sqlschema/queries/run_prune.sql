-- Deletes the agent's state of dropped jobs and caller stamps left by roles that inserted them
-- without calling a pgj_* function (see 002_0_owner.sql): those a role holds locked in an open
-- transaction are left for the next prune, so that no role can keep the stamps from being pruned.
-- The old runs go in batches, run_prune_batch.sql.
WITH fires AS (
    DELETE FROM pgjobs.pgj_fire_ f WHERE NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobid = f.firejobid)
)
DELETE FROM pgjobs.pgj_caller_
WHERE ctid = ANY (ARRAY(SELECT ctid FROM pgjobs.pgj_caller_ WHERE stamped < now() - interval '1 hour'
                        FOR UPDATE SKIP LOCKED))
