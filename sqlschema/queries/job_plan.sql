-- Records the next planned fire of jobs ($1 ids, $2 times; NULL: none).
INSERT INTO pgjobs.pgj_fire_ (firejobid, firenext)
SELECT p.id, p.next FROM unnest($1::int[], $2::timestamptz[]) AS p(id, next)
WHERE EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobid = p.id)
ON CONFLICT (firejobid) DO UPDATE SET firenext = EXCLUDED.firenext
WHERE pgjobs.pgj_fire_.firenext IS DISTINCT FROM EXCLUDED.firenext
