-- Claims fires ($1 job ids, $2 fire times) for the agent of leader epoch $3, and returns the jobs
-- it may run. A fire is claimed once: not by a second agent (another clock, a late leader), and
-- only while $3 is the current epoch, so an agent that lost the lease without noticing fires
-- nothing. The first row says whether $3 is the current epoch; the others (job id, owner) are the
-- fires claimed, with the name the job's owner's role has now (NULL when the role was dropped): a
-- renamed owner's job runs under the new name, without waiting for a reload. The rows are written in
-- the order of their job ids (see job_plan.sql).
WITH lead AS (SELECT epoch = $3 AS ours FROM pgjobs.pgj_leader_),
claimed AS (
    INSERT INTO pgjobs.pgj_fire_ AS f (firejobid, firelast)
    SELECT c.id, c.at FROM unnest($1::int[], $2::timestamptz[]) AS c(id, at)
    WHERE (SELECT ours FROM lead)
      AND EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobid = c.id)
    ORDER BY c.id
    ON CONFLICT (firejobid) DO UPDATE SET firelast = EXCLUDED.firelast
    WHERE f.firelast IS NULL OR f.firelast < EXCLUDED.firelast
    RETURNING f.firejobid,
        (SELECT r.rolname::text FROM pgjobs.pgj_job_ j JOIN pg_catalog.pg_roles r ON r.oid = j.jobownerid WHERE j.jobid = f.firejobid) AS owner
)
SELECT (SELECT ours FROM lead), NULL::int, NULL::text
UNION ALL
SELECT NULL, firejobid, owner FROM claimed
