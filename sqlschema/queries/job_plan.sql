-- Records the next planned fire of jobs ($1 ids, $2 times; NULL: none). The rows are written in
-- the order of their job ids, as every statement of the agent writing several rows of pgj_fire_
-- does, so that two of them (run ends, claims, plans) never deadlock.
INSERT INTO pgjobs.pgj_fire_ (firejobid, firenext)
SELECT p.id, p.next FROM unnest($1::int[], $2::timestamptz[]) AS p(id, next)
WHERE EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobid = p.id)
ORDER BY p.id
ON CONFLICT (firejobid) DO UPDATE SET firenext = EXCLUDED.firenext
WHERE pgjobs.pgj_fire_.firenext IS DISTINCT FROM EXCLUDED.firenext
