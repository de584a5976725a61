-- The runs the caller may see, latest first, for pgjobs runs: of job $1 (all when NULL), only the
-- failed ones (error, cancelled, abandoned, missed) when $2, of the last interval $3 (all when
-- NULL), at most $4.
SELECT job, owner, scheduled, started, finished, duration, status, sqlstate, message, detail, hint, context, agent, request
FROM pgjobs.pgj_runs
WHERE ($1::text IS NULL OR job = $1)
  AND (NOT $2::boolean OR status IN ('error', 'cancelled', 'abandoned', 'missed'))
  AND ($3::text IS NULL OR coalesce(started, scheduled, finished) >= now() - $3::interval)
ORDER BY coalesce(started, scheduled, finished) DESC NULLS LAST
LIMIT $4
