-- Drops the views and tables the agent set aside (schema version 18) and their schema,
-- pgjobs_gone; a view or table something of a role's depends on (by OID) makes it fail, naming
-- that. Each drop holds its locks to the end of the transaction, in the server's shared lock
-- table: more than a quarter of it are refused, saying how to go on.
DO $$
DECLARE
    v text;
    views int;
    locks int := current_setting('max_locks_per_transaction')::int
                 * (current_setting('max_connections')::int + current_setting('max_prepared_transactions')::int) / 4;
BEGIN
    -- as in uninstall_calls: a view takes 4 locks, a table 8
    SELECT pg_catalog.sum(CASE WHEN c.relkind = 'v' THEN 4 ELSE 8 END) INTO views
    FROM pg_catalog.pg_class c
    WHERE c.relnamespace OPERATOR(pg_catalog.=) 'pgjobs_gone'::pg_catalog.regnamespace AND c.relkind IN ('v', 'r');
    IF views > locks THEN
        RAISE EXCEPTION 'the database holds views and tables of former job calls set aside whose drops take % locks, more than one transaction can hold with max_locks_per_transaction = % (at most %)',
            views, current_setting('max_locks_per_transaction'), locks
            USING ERRCODE = 'program_limit_exceeded',
            HINT = 'raise max_locks_per_transaction (the server restarts for it), or let the agent drop them first (a minute after the last change)';
    END IF;
    FOR v IN SELECT pg_catalog.format('pgjobs_gone.%I', c.relname) FROM pg_catalog.pg_class c
             WHERE c.relnamespace OPERATOR(pg_catalog.=) 'pgjobs_gone'::pg_catalog.regnamespace AND c.relkind = 'v' LOOP
        EXECUTE 'DROP VIEW ' || v;
    END LOOP;
    FOR v IN SELECT pg_catalog.format('pgjobs_gone.%I', c.relname) FROM pg_catalog.pg_class c
             WHERE c.relnamespace OPERATOR(pg_catalog.=) 'pgjobs_gone'::pg_catalog.regnamespace AND c.relkind = 'r' LOOP
        EXECUTE 'DROP TABLE ' || v;
    END LOOP;
    DROP SCHEMA pgjobs_gone;
END
$$
