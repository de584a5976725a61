-- Sets the TimeZone of the current transaction to $1, an IANA zone: pgj_jobs computes a next run
-- in it when no agent recorded its own zone.
SELECT pg_catalog.set_config('TimeZone', $1, true)
