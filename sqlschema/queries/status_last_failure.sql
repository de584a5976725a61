-- pgjobs status: the latest failure (error, cancelled, abandoned) the caller may see, however old:
-- its job, the job's owner, status, end, SQLSTATE and message.
SELECT r.job, r.owner::text, r.status, r.finished, r.sqlstate, r.message
FROM pgjobs.pgj_runs r
WHERE r.status IN ('error', 'cancelled', 'abandoned')
ORDER BY r.finished DESC NULLS LAST
LIMIT 1
