-- pgjobs schema version 17: the agent's drop of the views of former calls is bounded in time,
-- whatever a role holds. Version 16 waited up to 100 ms for the lock of each view: a role that kept
-- 260 of its former views locked in an open transaction made each drop round of the agent wait
-- 26 s, on one of its record sessions, and a statement past the agent's 30 s timeout rolled back
-- the drops of other roles' views with it (the last attacker review of version 16). Locks on the
-- views' row types, and locks let go just before the wait would time out, did the same to a
-- first fix that only skipped what pg_locks showed (the attacker review of version 17). Its second
-- review found two faults of version 16 around the queue of former rows (pgj_call_gone_): a role
-- that held its own queued rows made every drop fail at its end, and a role whose queued rows
-- named a table it dropped could set no call until the next drop. Its third found that the drop
-- walked, and locked, whatever used a view's row type before it refused (since version 15).
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_held_ returns the relations of this database that another session (a prepared
-- transaction too) holds a lock on or waits for, or on what DROP locks with them: their row type
-- and its array type, their rules and constraints, their indexes, TOAST table and its index.
CREATE FUNCTION pgjobs.pgj_call_held_() RETURNS oid[]
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    WITH l AS (SELECT * FROM pg_locks
               WHERE database = (SELECT oid FROM pg_database WHERE datname = current_database())
                 AND pid IS DISTINCT FROM pg_backend_pid()),
    locked AS (
        SELECT l.relation AS rel FROM l WHERE l.locktype = 'relation'
        UNION ALL
        SELECT coalesce(nullif(t.typrelid, 0), e.typrelid) FROM l JOIN pg_type t ON t.oid = l.objid
        LEFT JOIN pg_type e ON e.oid = t.typelem
        WHERE l.locktype = 'object' AND l.classid = 'pg_type'::regclass
        UNION ALL
        SELECT r.ev_class FROM l JOIN pg_rewrite r ON r.oid = l.objid
        WHERE l.locktype = 'object' AND l.classid = 'pg_rewrite'::regclass
        UNION ALL
        SELECT c.conrelid FROM l JOIN pg_constraint c ON c.oid = l.objid
        WHERE l.locktype = 'object' AND l.classid = 'pg_constraint'::regclass),
    -- an index's table, a TOAST table's owner, the owner of a TOAST table's index
    mapped AS (
        SELECT rel FROM locked
        UNION ALL
        SELECT i.indrelid FROM locked JOIN pg_index i ON i.indexrelid = locked.rel
        UNION ALL
        SELECT o.oid FROM locked JOIN pg_class t ON t.oid = locked.rel AND t.relkind = 't' JOIN pg_class o ON o.reltoastrelid = t.oid
        UNION ALL
        SELECT o.oid FROM locked JOIN pg_index i ON i.indexrelid = locked.rel
        JOIN pg_class t ON t.oid = i.indrelid AND t.relkind = 't' JOIN pg_class o ON o.reltoastrelid = t.oid)
    SELECT coalesce(array_agg(DISTINCT rel), '{}') FROM mapped WHERE rel IS NOT NULL AND rel <> 0
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_held_() FROM PUBLIC;

-- pgj_call_type_used_ tells whether anything depends on the row type of relation p_rel, or on its
-- array type (but the array type's own link to the row type): a column or a domain of that type.
-- DROP walks all of them, locking each, before it refuses: a role's 170 temporary tables of 1,600
-- columns of its former view's row type made one drop run 33 s, and 8,000 domains ran the lock
-- table out (the third review of version 17).
CREATE FUNCTION pgjobs.pgj_call_type_used_(p_rel oid) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT FROM pg_class c JOIN pg_type t ON t.oid = c.reltype
                   JOIN pg_depend d ON d.refclassid = 'pg_type'::regclass AND d.refobjid IN (t.oid, t.typarray)
                   WHERE c.oid = p_rel
                     AND NOT (d.classid = 'pg_type'::regclass AND d.objid = t.typarray AND d.refobjid = t.oid AND d.deptype = 'i'))
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_type_used_(oid) FROM PUBLIC;

-- pgj_call_spent_ returns p_spent (by role OID, the seconds its tries took beyond 10 ms each: a try
-- takes a few ms unless it waits for a lock) with the try of role p_of begun at p_since added.
CREATE FUNCTION pgjobs.pgj_call_spent_(p_spent jsonb, p_of oid, p_since timestamptz) RETURNS jsonb
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT jsonb_set(p_spent, ARRAY[p_of::text], to_jsonb(coalesce((p_spent ->> p_of::text)::float8, 0)
                     + greatest(extract(epoch FROM clock_timestamp() - p_since) - 0.01, 0)))
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_spent_(jsonb, oid, timestamptz) FROM PUBLIC;

-- pgj_call_views_sweep_ drops those of views p_views (which the agent found no job used, a while
-- before) that no job uses now, at most 200, with their rows of arguments, then the tables of
-- arguments no view reads (theirs, and those p_views names: pgjobs_call_<OID>.args_<hex>), then,
-- when p_tidy (the agent's last statement of a round), the call schemas left empty of roles that
-- have no job and the queue's rows of tables gone. It returns how many views it dropped
-- (dropped); how many views and tables it left because another session held them or something
-- of a role's hangs on them (held: found in pg_locks before each loop, a lock waited for 1 ms, or
-- a dependency); how many tries failed otherwise (failed); and how many it left for the time
-- budget (deferred): it tries the owners' views in turns, one of each owner's then the next, no
-- more of an owner's once its tries took p_each_budget in all beyond 10 ms each (the tables' tries
-- counted apart: only their owner may lock them), and none once the sweep took p_budget. What it
-- leaves is tried again at a later sweep. Only the agent may call it (a role that may update the
-- leader lease, as the agents' roles must: checked for the session's role).
CREATE FUNCTION pgjobs.pgj_call_views_sweep_(p_views text[], p_budget interval,
    p_each_budget interval DEFAULT '500 ms', p_tidy boolean DEFAULT true, OUT dropped int, OUT held int, OUT deferred int,
    OUT failed int)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
-- what pgj_call_held_ did not show (taken since) is not waited for: during a DROP's wait a role
-- could commit what uses the row type, which the DROP then walks (the fourth review of version 17)
SET lock_timeout = '1ms'
AS $$
DECLARE
    v record;
    tables oid[] := '{}';
    busy oid[]; -- what another session holds or waits for (pgj_call_held_)
    spent jsonb := '{}'; -- by owner OID, the seconds its tries took beyond 10 ms each
    began timestamptz := clock_timestamp();
    try timestamptz;
    tried int := 0;
BEGIN
    dropped := 0; held := 0; deferred := 0; failed := 0;
    IF NOT has_table_privilege(session_user, 'pgjobs.pgj_leader_', 'UPDATE') THEN
        RAISE EXCEPTION 'pgj_call_views_sweep_: only the agent drops the views of former calls'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF cardinality(p_views) > 200 THEN
        RAISE EXCEPTION 'pgj_call_views_sweep_: % views given, at most 200 at a time', cardinality(p_views)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    busy := pgjobs.pgj_call_held_();
    FOR v IN SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name, c.oid AS view, c.relowner AS owner, substr(c.relname, 6) AS hex,
                    (SELECT t.oid FROM pg_depend d JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
                     JOIN pg_class t ON d.refclassid = 'pg_class'::regclass AND t.oid = d.refobjid
                     WHERE r.ev_class = c.oid AND t.relnamespace = n.oid AND t.relname ~ '^args_[0-9a-f]{32}$' AND t.relkind = 'r' AND t.relowner = c.relowner
                     LIMIT 1) AS args
             FROM unnest(p_views) AS w(view)
             JOIN pg_namespace n ON n.nspname = split_part(w.view, '.', 1)
             JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = split_part(w.view, '.', 2)
             WHERE w.view ~ '^pgjobs_call_[0-9]+\.call_[0-9a-f]{32}$' AND c.relkind = 'v'
               AND ((SELECT rolsuper FROM pg_roles WHERE oid = n.nspowner) OR n.nspowner::text = substr(n.nspname, 13))
               AND c.relowner::text = substr(n.nspname, 13)
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = w.view)
             -- the owners in turns: the first view of each, then the second of each, ...
             ORDER BY row_number() OVER (PARTITION BY c.relowner ORDER BY c.relname), c.relowner LOOP
        IF v.view = ANY (busy) THEN
            held := held + 1; -- a run of the former call, or a role's lock: tried again later
            CONTINUE;
        ELSIF (tried > 0 AND clock_timestamp() - began > p_budget) OR (spent ->> v.owner::text)::float8 >= extract(epoch FROM p_each_budget) THEN
            deferred := deferred + 1;
            CONTINUE;
        END IF;
        try := clock_timestamp();
        tried := tried + 1;
        BEGIN
            -- locked first, then dropped only if nothing hangs on it but its own rule (a trigger
            -- would go with it, taking locks: a role's view with 20,000 of them made the drop run
            -- out of the lock table; locked, none can be added meanwhile). LOCK TABLE on a view
            -- would lock the tables it reads too, holding up the runs of the role's other calls:
            -- an ALTER VIEW that changes nothing locks the view alone.
            EXECUTE 'ALTER VIEW ' || v.name || ' ALTER COLUMN pgj_call_ DROP DEFAULT';
            -- (no CONTINUE in this block: the try's time is counted below)
            IF NOT EXISTS (SELECT FROM pg_depend d
                           WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = v.view
                             AND NOT (d.classid = 'pg_rewrite'::regclass -- its own rule, not one its role added
                                      AND d.objid IN (SELECT r.oid FROM pg_rewrite r WHERE r.ev_class = v.view AND r.rulename = '_RETURN'))
                             AND NOT (d.classid = 'pg_type'::regclass AND d.deptype = 'i'))
               AND NOT pgjobs.pgj_call_type_used_(v.view)
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = split_part(v.name, '.', 1) || '.' || split_part(v.name, '.', 2)) THEN
                EXECUTE 'DROP VIEW ' || v.name;
                IF v.args IS NOT NULL THEN
                    -- the view's row: its role deletes it at its next call
                    INSERT INTO pgjobs.pgj_call_gone_ VALUES (v.owner, v.args, v.hex) ON CONFLICT DO NOTHING;
                    tables := tables || v.args;
                END IF;
                dropped := dropped + 1;
            ELSE
                held := held + 1; -- something of a role's hangs on it (a default naming it by OID, a column of its type)
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            held := held + 1; -- taken since the sweep began: tried again later
        WHEN OTHERS THEN
            failed := failed + 1; -- renamed or dropped meanwhile, or its owner made something on it: tried again later
        END;
        spent := pgjobs.pgj_call_spent_(spent, v.owner, try);
    END LOOP;
    -- the tables of arguments of the views dropped, and those given, once no view reads them (a
    -- role's views all went with DROP OWNED), and nothing else hangs on them (a trigger would go
    -- with them, taking locks); the owners' tries counted anew: no other role may lock these
    busy := pgjobs.pgj_call_held_();
    spent := '{}';
    FOR v IN SELECT t.oid, t.oid::regclass::text AS name, t.relowner AS owner
             FROM pg_class t JOIN pg_namespace n ON n.oid = t.relnamespace
             WHERE t.relkind = 'r' AND t.relname ~ '^args_[0-9a-f]{32}$' AND n.nspname ~ '^pgjobs_call_[0-9]+$'
               AND t.relowner::text = substr(n.nspname, 13)
               AND (t.oid = ANY (tables) OR (n.nspname || '.' || t.relname) = ANY (p_views))
               -- read by no view (else it is not locked: the runs of the calls that read it would wait)
               AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = t.oid
                                                        AND d.classid = 'pg_rewrite'::regclass)
             ORDER BY row_number() OVER (PARTITION BY t.relowner ORDER BY t.relname), t.relowner LOOP
        IF v.oid = ANY (busy) THEN
            held := held + 1;
            CONTINUE;
        ELSIF (tried > 0 AND clock_timestamp() - began > p_budget) OR (spent ->> v.owner::text)::float8 >= extract(epoch FROM p_each_budget) THEN
            deferred := deferred + 1;
            CONTINUE;
        END IF;
        try := clock_timestamp();
        tried := tried + 1;
        BEGIN
            -- locked by an ALTER TABLE that changes nothing: LOCK TABLE on what its role made a view
            -- (PostgreSQL 15 lets it) would lock what that view reads, as the definer
            EXECUTE 'ALTER TABLE ONLY ' || v.name || ' ALTER COLUMN id DROP DEFAULT';
            -- unless read by a view, or something of its role's hangs on it
            IF NOT EXISTS (SELECT FROM pg_depend d
                           WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = v.oid
                             AND NOT (d.classid = 'pg_type'::regclass AND d.deptype = 'i')
                             AND NOT (d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')
                                      AND d.objid IN (SELECT i.indexrelid FROM pg_index i WHERE i.indrelid = v.oid
                                                      UNION ALL SELECT t.reltoastrelid FROM pg_class t WHERE t.oid = v.oid))
                             AND NOT (d.classid = 'pg_constraint'::regclass AND d.deptype = 'a'
                                      AND d.objid IN (SELECT c.oid FROM pg_constraint c WHERE c.conrelid = v.oid AND c.contype = 'p')))
               AND NOT pgjobs.pgj_call_type_used_(v.oid) THEN
                EXECUTE 'DROP TABLE ' || v.name;
                -- its queued rows; those its role holds (pgj_call_gone_done_ in an open
                -- transaction) go at a later sweep, below
                DELETE FROM pgjobs.pgj_call_gone_ WHERE (goneowner, gonetable, goneid) IN
                    (SELECT goneowner, gonetable, goneid FROM pgjobs.pgj_call_gone_ WHERE gonetable = v.oid FOR UPDATE SKIP LOCKED);
            ELSE
                held := held + 1;
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            held := held + 1;
        WHEN OTHERS THEN
            failed := failed + 1; -- a view was made on it meanwhile: tried again later
        END;
        spent := pgjobs.pgj_call_spent_(spent, v.owner, try);
    END LOOP;
    IF NOT p_tidy THEN
        RETURN; -- the schemas and the queue at the round's last statement
    END IF;
    -- the schema of a role whose jobs are all dropped, once empty: the role may then be dropped;
    -- not one another session holds (any role may lock any schema by name, pg_get_object_address:
    -- each cost every statement a wait, the third review of version 17)
    busy := ARRAY(SELECT l.objid FROM pg_locks l
                  WHERE l.locktype = 'object' AND l.classid = 'pg_namespace'::regclass
                    AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                    AND l.pid IS DISTINCT FROM pg_backend_pid());
    FOR v IN SELECT quote_ident(n.nspname) AS name FROM pg_namespace n
             WHERE n.nspname ~ '^pgjobs_call_[0-9]+$' AND n.oid <> ALL (busy)
               AND ((SELECT rolsuper FROM pg_roles WHERE oid = n.nspowner) OR n.nspowner::text = substr(n.nspname, 13))
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobownerid::text = substr(n.nspname, 13))
               AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.refclassid = 'pg_namespace'::regclass AND d.refobjid = n.oid) LOOP
        EXIT WHEN tried > 0 AND clock_timestamp() - began > p_budget; -- the rest at a later sweep
        tried := tried + 1;
        BEGIN
            EXECUTE 'DROP SCHEMA ' || v.name;
        EXCEPTION WHEN OTHERS THEN
            NULL; -- something else is in it, or it is in use
        END;
    END LOOP;
    -- the rows of tables dropped otherwise (DROP OWNED BY), but those a role holds: a role that
    -- held its own (pgj_call_gone_done_ in an open transaction) made version 16's DELETE wait for
    -- them and fail the sweep, every sweep, dropping nothing of any role's (the attacker review of
    -- version 17)
    BEGIN
        DELETE FROM pgjobs.pgj_call_gone_ WHERE (goneowner, gonetable, goneid) IN
            (SELECT g.goneowner, g.gonetable, g.goneid FROM pgjobs.pgj_call_gone_ g
             WHERE NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = g.gonetable) FOR UPDATE SKIP LOCKED);
    EXCEPTION WHEN OTHERS THEN
        NULL; -- at a later sweep
    END;
END
$$;

-- Version 16's bind failed while a table of the caller's former rows was gone (its owner dropped
-- it), until the agent's next drop forgot them: the rows of a table gone are only forgotten.
-- pgj_call_bind_ parses a job's call as the caller would run it, with the caller's privileges and
-- search path (p_path), into a temporary view, without running anything, checks it
-- (pgj_call_view_check_), evaluates its arguments as the caller into a temporary table (their
-- input functions, casts and domain checks run now, once, with the caller's settings), has
-- pgj_call_store_ make the call's view from them, and copies them into the view's table of
-- arguments. It returns the call written back, its function and the view. The call must pass pgj_call_syntax_: one function call with constant arguments.
-- The temporary objects are dropped before it returns; all goes with the transaction if it fails.
CREATE OR REPLACE FUNCTION pgjobs.pgj_call_bind_(p_function text, p_argno int, p_call text, p_path text,
    OUT call text, OUT funcoid oid, OUT view text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
AS $$
DECLARE
    checked text := pgjobs.pgj_call_syntax_(p_function, p_argno, p_call);
    hex text := replace(gen_random_uuid()::text, '-', '');
    probe text := 'pg_temp.pgj_probe_' || hex;
    given text := 'pg_temp.pgj_given_' || hex;
    staged text := 'pg_temp.pgj_staged_' || hex;
    split record;
    stored record;
    gone record;
    reg oid;
    regs oid[] := '{}';
    held boolean;
    inserted bigint;
    cols text[] := '{}';
    types oid[];
    saved text[];
    stray text;
    i int;
BEGIN
    IF NOT has_database_privilege(current_database(), 'TEMPORARY') THEN
        RAISE EXCEPTION '%: role % may not create temporary tables in database %, which setting a job''s call needs',
            p_function, current_user, current_database()
            USING ERRCODE = 'insufficient_privilege', HINT = format('GRANT TEMPORARY ON DATABASE %I TO %I', current_database(), current_user);
    END IF;
    BEGIN
        PERFORM set_config('search_path', p_path, true);
        -- IS NULL: a view has no column of type void, the result of most job functions.
        EXECUTE 'CREATE TEMPORARY VIEW ' || probe || ' AS SELECT (' || checked || ') IS NULL AS pgj_call_';
        PERFORM set_config('search_path', 'pg_catalog, pg_temp', true);
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION '%: argument % (function call) % does not resolve: %', p_function, p_argno, quote_literal(left(checked, 200)), SQLERRM
            USING ERRCODE = SQLSTATE, HINT = 'create the function first, or fix its name, schema or arguments';
    END;
    SELECT c.call, c.funcoid INTO call, funcoid FROM pgjobs.pgj_call_view_check_(p_function, p_argno, checked, probe::regclass) c;
    split := pgjobs.pgj_call_args_(p_function, call, funcoid);
    types := split.types;
    IF cardinality(types) > 0 THEN
        FOR i IN 1 .. cardinality(types) LOOP
            cols := cols || CASE WHEN (SELECT typtype FROM pg_type WHERE oid = types[i]) = 'p'
                                 THEN format('(%s) AS a%s', split.args[i], i) -- polymorphic: the argument's own type
                                 ELSE format('CAST((%s) AS %s) AS a%s', split.args[i], format_type(types[i], -1), i) END;
        END LOOP;
        -- the constants as pgj_call_view_check_ wrote them back: read with the same settings
        saved := ARRAY[current_setting('DateStyle'), current_setting('IntervalStyle'), current_setting('extra_float_digits')];
        PERFORM set_config('DateStyle', 'ISO, MDY', true), set_config('IntervalStyle', 'postgres', true),
                set_config('extra_float_digits', '3', true);
        BEGIN
            EXECUTE 'CREATE TEMPORARY VIEW ' || given || ' AS SELECT ' || array_to_string(cols, ', ');
        EXCEPTION WHEN OTHERS THEN
            -- regproc and regoper values are written back by name, which an overload makes ambiguous
            RAISE EXCEPTION '%: argument % (function call) %: its arguments as PostgreSQL writes them back (%) do not read again: %',
                p_function, p_argno, quote_literal(left(checked, 200)), left(call, 200), SQLERRM
                USING ERRCODE = SQLSTATE, HINT = 'pass a function or an operator with its argument types (regprocedure, regoperator), not by name alone (regproc, regoper)';
        END;
        PERFORM set_config('DateStyle', saved[1], true), set_config('IntervalStyle', saved[2], true),
                set_config('extra_float_digits', saved[3], true);
        -- read again by name, the arguments name nothing the checked call did not: the types they go to aside
        SELECT string_agg(pg_describe_object(d.refclassid, d.refobjid, 0), ', ') INTO stray
        FROM pg_depend d JOIN pg_rewrite w ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
        WHERE w.ev_class = given::regclass AND NOT (d.refclassid = 'pg_class'::regclass AND d.refobjid = given::regclass)
          AND NOT (d.refclassid = 'pg_type'::regclass AND d.refobjid = ANY (types))
          AND NOT EXISTS (SELECT FROM pg_depend e JOIN pg_rewrite x ON e.classid = 'pg_rewrite'::regclass AND e.objid = x.oid
                          WHERE x.ev_class = probe::regclass AND e.refclassid = d.refclassid AND e.refobjid = d.refobjid);
        IF stray IS NOT NULL THEN
            RAISE EXCEPTION '%: argument % (function call) %: what it names changed while it was set (%)', p_function, p_argno, quote_literal(left(checked, 200)), stray
                USING ERRCODE = 'serialization_failure', HINT = 'run the transaction again';
        END IF;
        types := ARRAY(SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = given::regclass AND a.attnum > 0 ORDER BY a.attnum);
        -- evaluated now, once, as the caller, with the caller's settings and search path
        PERFORM set_config('search_path', p_path, true);
        EXECUTE 'CREATE TEMPORARY TABLE ' || staged || ' AS SELECT * FROM ' || given;
        PERFORM set_config('search_path', 'pg_catalog, pg_temp', true);
        -- the reg* values, which go into the view by OID; held in an array, a row or a range,
        -- only a NULL may be kept
        FOR i IN 1 .. cardinality(types) LOOP
            reg := NULL;
            IF pgjobs.pgj_type_regbase_(types[i]) IS NOT NULL THEN
                EXECUTE format('SELECT (a%s)::pg_catalog.oid FROM ONLY %s', i, staged) INTO reg;
            ELSIF pgjobs.pgj_type_holds_reg_(types[i]) THEN
                EXECUTE format('SELECT a%s IS NULL FROM ONLY %s', i, staged) INTO held;
                IF NOT held THEN
                    RAISE EXCEPTION '%: argument % (function call) %: argument % of type % holds reg* values in an array, a row or a range, which cannot be kept',
                        p_function, p_argno, quote_literal(left(checked, 200)), i, format_type(types[i], NULL)
                        USING ERRCODE = 'invalid_parameter_value', HINT = 'pass the names as text[] to a text[] parameter';
                END IF;
            END IF;
            regs := regs || reg;
        END LOOP;
    END IF;
    PERFORM pgjobs.pgj_stamp_();
    SELECT s.view, s.args, s.copied INTO stored FROM pgjobs.pgj_call_store_(p_function, funcoid, split.names, split.last_variadic, types, regs) s;
    view := stored.view;
    IF stored.args IS NOT NULL THEN
        -- the arguments go into the caller's table as the caller (the same types: no code runs but
        -- the caller's own triggers)
        EXECUTE format('INSERT INTO %s SELECT %L, %s FROM ONLY %s', stored.args, split_part(view, '.call_', 2), stored.copied, staged);
        GET DIAGNOSTICS inserted = ROW_COUNT;
        IF inserted <> 1 THEN -- a rule of the caller's on its table took the row
            RAISE EXCEPTION '%: argument % (function call) %: its arguments were not kept: % rows went into %, not one',
                p_function, p_argno, quote_literal(left(checked, 200)), inserted, stored.args
                USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'drop the rules on that table (its owner may)';
        END IF;
    END IF;
    -- the rows of the caller's former calls' views the agent dropped since its last call, which
    -- the agent may not delete (it would run the caller's code): deleted as the caller
    PERFORM pgjobs.pgj_stamp_();
    -- (a table gone has no name: format('%I', NULL) would fail the bind, as in version 16)
    FOR gone IN SELECT g.tab, g.ids, CASE WHEN c.oid IS NOT NULL THEN format('%I.%I', n.nspname, c.relname) END AS name
                FROM pgjobs.pgj_call_gone_list_(p_function) g
                LEFT JOIN pg_class c ON c.oid = g.tab AND c.relkind = 'r'
                                     AND c.relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user)
                LEFT JOIN pg_namespace n ON n.oid = c.relnamespace LOOP
        BEGIN
            IF gone.name IS NOT NULL THEN
                EXECUTE format('DELETE FROM ONLY %s WHERE id = ANY ($1)', gone.name) USING gone.ids;
            END IF;
            PERFORM pgjobs.pgj_stamp_();
            PERFORM pgjobs.pgj_call_gone_done_(p_function, gone.tab, gone.ids);
        EXCEPTION WHEN OTHERS THEN -- kept in the queue: tried again at the caller's next call
            RAISE WARNING '%: the arguments of % former calls in table % stay: %', p_function, cardinality(gone.ids), gone.name, SQLERRM;
        END;
    END LOOP;
    EXECUTE 'DROP VIEW ' || probe;
    IF cardinality(types) > 0 THEN
        EXECUTE 'DROP TABLE ' || staged;
        EXECUTE 'DROP VIEW ' || given;
    END IF;
END
$$;


-- version 16's drop, which waited for each view, is called no longer: no role may. It is not
-- dropped: a role's view over it would make the upgrade fail.
REVOKE ALL ON FUNCTION pgjobs.pgj_call_views_drop_(text[]) FROM PUBLIC;
-- the agent's (the sweep checks its caller)
REVOKE ALL ON FUNCTION pgjobs.pgj_call_views_sweep_(text[], interval, interval, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgjobs.pgj_call_views_sweep_(text[], interval, interval, boolean) TO PUBLIC;
