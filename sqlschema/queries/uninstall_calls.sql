-- Drops the schemas of the job calls' views (schema version 15: pgjobs_call_<role OID>, each owned
-- by its role) with what is in them.
DO $$
DECLARE
    s text;
BEGIN
    FOR s IN SELECT nspname FROM pg_catalog.pg_namespace
             WHERE nspname ~ '^pgjobs_call_[0-9]+$' AND nspowner::text = substr(nspname, 13) LOOP
        EXECUTE format('DROP SCHEMA %I CASCADE', s);
    END LOOP;
END
$$
