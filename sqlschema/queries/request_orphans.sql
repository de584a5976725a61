-- Answers the requests to run a job now that an agent of an earlier lead took but left without a
-- run recorded (it died or lost its session before the run started, or before its record), for
-- the lead of epoch $1, but for those of $2, whose runs the new lead's agent still has going (its
-- runs outlive its terms): whoever waits for them (pgjobs run --wait) learns to ask again rather
-- than wait forever. A run that still records later (a deposed agent's) keeps its row, and wins.
UPDATE pgjobs.pgj_request_ q
SET reqerror = 'the agent that took this request stopped before a run of the job was recorded: ask again (pgjobs run)'
WHERE q.reqtaken IS NOT NULL AND q.reqerror IS NULL AND q.reqepoch <> $1 AND q.reqid <> ALL ($2::bigint[])
  AND EXISTS (SELECT FROM pgjobs.pgj_leader_ l WHERE l.epoch = $1)
  AND NOT EXISTS (SELECT FROM pgjobs.pgj_run_ r WHERE r.runrequest = q.reqid)
