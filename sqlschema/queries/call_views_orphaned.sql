-- The views of job calls (pgjobs_call_<role OID>.call_<hex>, their role's, in its call schema: a
-- superuser's since schema version 16) that no job uses: of calls set again since, and of dropped
-- jobs.
SELECT n.nspname || '.' || c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'v' AND n.nspname ~ '^pgjobs_call_[0-9]+$'
  AND ((SELECT r.rolsuper FROM pg_roles r WHERE r.oid = n.nspowner) OR n.nspowner::text = substr(n.nspname, 13))
  AND c.relowner::text = substr(n.nspname, 13)
  AND c.relname ~ '^call_[0-9a-f]{32}$'
  AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = n.nspname || '.' || c.relname)
UNION ALL
-- and the tables of their arguments (version 16), their role's, that no view reads: its views went
-- with CASCADE
SELECT n.nspname || '.' || c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind = 'r' AND n.nspname ~ '^pgjobs_call_[0-9]+$' AND c.relname ~ '^args_[0-9a-f]{32}$'
  AND c.relowner::text = substr(n.nspname, 13)
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid
                                            AND d.classid = 'pg_rewrite'::regclass)
UNION ALL
-- and the call schemas left empty of roles that have no job (the views and tables of a role's
-- calls all went with DROP OWNED BY, or with CASCADE)
SELECT n.nspname
FROM pg_namespace n
WHERE n.nspname ~ '^pgjobs_call_[0-9]+$'
  AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobownerid::text = substr(n.nspname, 13))
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = n.oid)
UNION ALL
-- and what the agent set aside (schema version 18), dropped at a later round
SELECT 'pgjobs_gone.' || c.relname
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = 'pgjobs_gone' AND c.relkind IN ('v', 'r')
ORDER BY 1
