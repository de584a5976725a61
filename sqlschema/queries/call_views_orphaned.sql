-- The views of job calls (pgjobs_call_<role OID>.call_<hex>, in their role's own schema) that no
-- job uses: of calls set again since, and of dropped jobs.
SELECT n.nspname || '.' || c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'v' AND n.nspname ~ '^pgjobs_call_[0-9]+$' AND n.nspowner::text = substr(n.nspname, 13)
  AND c.relname ~ '^call_[0-9a-f]{32}$'
  AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = n.nspname || '.' || c.relname)
ORDER BY 1
