-- Drops the views of the job calls (schema version 15), as pgjobs names them, and the tables of
-- their arguments (version 16), then their schemas (pgjobs_call_<role OID>) left empty; a schema that holds something else (its owner's, or, after
-- REASSIGN OWNED, another role's) stays, and a view something depends on makes it fail, naming
-- that. Each drop holds its locks to the end of the transaction, in the server's shared lock
-- table: more views than a quarter of it are refused, saying how to go on.
DO $$
DECLARE
    v text;
    views int;
    locks int := current_setting('max_locks_per_transaction')::int
                 * (current_setting('max_connections')::int + current_setting('max_prepared_transactions')::int) / 4;
BEGIN
    -- measured: a view takes 4 locks (itself, its two types, its rule), a table of arguments 8
    -- (itself, its index, its TOAST table and index, its types, its constraint)
    SELECT pg_catalog.sum(CASE WHEN c.relkind = 'v' THEN 4 ELSE 8 END) INTO views
    FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_class c ON c.relnamespace OPERATOR(pg_catalog.=) n.oid
    WHERE n.nspname ~ '^pgjobs_call_[0-9]+$'
      AND (c.relname ~ '^call_[0-9a-f]{32}$' AND c.relkind = 'v' OR c.relname ~ '^args_[0-9a-f]{32}$' AND c.relkind = 'r');
    IF views > locks THEN
        RAISE EXCEPTION 'the database holds job calls whose views and tables take % locks to drop, more than one transaction can hold with max_locks_per_transaction = % (at most %)',
            views, current_setting('max_locks_per_transaction'), locks
            USING ERRCODE = 'program_limit_exceeded',
            HINT = 'raise max_locks_per_transaction (the server restarts for it), or drop jobs first (pgj_drop_job) and let the agent drop their views, a minute later';
    END IF;
    FOR v IN SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
             FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_class c ON c.relnamespace OPERATOR(pg_catalog.=) n.oid
             WHERE n.nspname ~ '^pgjobs_call_[0-9]+$' AND c.relname ~ '^call_[0-9a-f]{32}$' AND c.relkind = 'v' LOOP
        EXECUTE 'DROP VIEW ' || v;
    END LOOP;
    FOR v IN SELECT pg_catalog.format('%I.%I', n.nspname, c.relname)
             FROM pg_catalog.pg_namespace n JOIN pg_catalog.pg_class c ON c.relnamespace OPERATOR(pg_catalog.=) n.oid
             WHERE n.nspname ~ '^pgjobs_call_[0-9]+$' AND c.relname ~ '^args_[0-9a-f]{32}$' AND c.relkind = 'r' LOOP
        EXECUTE 'DROP TABLE ' || v;
    END LOOP;
    FOR v IN SELECT pg_catalog.quote_ident(nspname) FROM pg_catalog.pg_namespace WHERE nspname ~ '^pgjobs_call_[0-9]+$' LOOP
        BEGIN
            EXECUTE 'DROP SCHEMA ' || v;
        EXCEPTION WHEN dependent_objects_still_exist THEN
            NULL; -- it holds something else: it stays
        END;
    END LOOP;
END
$$
