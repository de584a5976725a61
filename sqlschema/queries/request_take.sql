-- Takes, for the lead of epoch $1, the waiting requests to run a job now (pgj_run_job) whose job
-- the agent plans as it is ($2: the ids of the jobs it has loaded, none of them paused; $3: the row
-- versions, xmin, it loaded), at most $4, oldest first, and returns each one's id, job id and job
-- name. The same statement answers the waiting requests whose job was paused or dropped since:
-- their jobs do not run. The requests of a job made or changed (any change of its row: its call,
-- its name, its time limit, ...) since the load wait for the take after the reload that the
-- change's notification brings: the run takes the job as it is then. (The planned jobs are joined,
-- hashed: a lookup in the arrays for each waiting request cost seconds with 200,000 jobs.)
-- Nothing when $1 no longer holds the lease: a deposed agent runs nothing a new leader owns. A
-- request is taken once: a second taker finds it taken.
WITH lead AS (
    SELECT FROM pgjobs.pgj_leader_ WHERE epoch = $1
), gone AS (
    UPDATE pgjobs.pgj_request_ q
    SET reqtaken = now(), reqepoch = $1,
        reqerror = 'job ' || q.reqjobname || ' was not run: it was paused or dropped after the request'
    WHERE q.reqtaken IS NULL AND EXISTS (SELECT FROM lead)
      AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobid = q.reqjobid AND NOT j.jobpaused)
), picked AS (
    SELECT q.reqid FROM pgjobs.pgj_request_ q
    JOIN unnest($2::int[], $3::text[]) AS p(id, version) ON p.id = q.reqjobid
    JOIN pgjobs.pgj_job_ j ON j.jobid = q.reqjobid AND NOT j.jobpaused AND j.xmin::text = p.version
    WHERE q.reqtaken IS NULL AND EXISTS (SELECT FROM lead)
    ORDER BY q.reqid
    LIMIT $4
    FOR UPDATE OF q SKIP LOCKED
)
UPDATE pgjobs.pgj_request_ q SET reqtaken = now(), reqepoch = $1
FROM picked WHERE q.reqid = picked.reqid
RETURNING q.reqid, q.reqjobid, q.reqjobname
