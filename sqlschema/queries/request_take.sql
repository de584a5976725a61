-- Takes the waiting requests to run a job now (pgj_run_job) for the lead of epoch $1, and returns
-- each request's id, job id and job name. None when $1 no longer holds the lease: a deposed
-- agent runs nothing a new leader owns. A request is taken once: a second taker finds it taken.
UPDATE pgjobs.pgj_request_ q SET reqtaken = now(), reqepoch = $1
WHERE q.reqtaken IS NULL
  AND EXISTS (SELECT FROM pgjobs.pgj_leader_ l WHERE l.epoch = $1)
RETURNING q.reqid, q.reqjobid, q.reqjobname
