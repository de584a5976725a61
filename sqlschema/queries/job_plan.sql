-- Records the next planned run of jobs ($1 ids, $2 times; NULL: none). The notification trigger ignores this column.
UPDATE pgjobs.pgj_job_ j SET jobnextrun = p.next
FROM unnest($1::int[], $2::timestamptz[]) AS p(id, next)
WHERE j.jobid = p.id AND j.jobnextrun IS DISTINCT FROM p.next
