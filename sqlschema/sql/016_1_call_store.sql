-- pgjobs schema version 16, continued: pgj_call_store_ makes the view and keeps the arguments of a
-- call, and pgj_call_bind_ evaluates them, as the caller, to give it.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_store_ makes the view of a call of function p_funcoid, for the caller (the stamp says
-- who calls), in its call schema, and returns its name (pgjobs_call_<role OID>.call_<32 hex>),
-- the table it reads its arguments from and the columns of the caller's evaluated arguments that
-- go there. Argument i is of type p_types[i] and passed by name p_names[i] (NULL: by position),
-- the last one VARIADIC if p_variadic. A reg* argument goes into the view itself, by OID
-- (p_regs[i]: the caller must be allowed to look the object up by name); one that holds reg*
-- values in an array, a row or a range only as a NULL. The others are read from table args
-- (args_<md5 of their types>, made when missing and given to the caller), where the caller then
-- copies them in a row keyed by the view's hex: only superusers and the caller read it. The view
-- is the caller's. The definer reads, writes and plans no query over any table of the caller's:
-- its triggers, and the expressions of its statistics objects, which the planner folds, would run
-- as the definer (the attacker review of version 16 made a role superuser both ways).
CREATE FUNCTION pgjobs.pgj_call_store_(p_function text, p_funcoid oid, p_names text[], p_variadic boolean,
    p_types oid[], p_regs oid[], OUT view text, OUT args text, OUT copied text)
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET default_tablespace = '' -- not the caller's: the table would go where the caller may not create
SET default_table_access_method = heap
AS $$
DECLARE
    caller oid := pgjobs.pgj_caller_take_(p_function);
    n int := coalesce(cardinality(p_types), 0);
    hex text := replace(gen_random_uuid()::text, '-', '');
    schema text;
    fn text;
    stray text;
    reg regtype;
    exprs text[] := '{}';
    copies text[] := '{}';
    kept oid[] := '{}';
    tab text;
    made oid;
    body text;
    refused text;
    i int;
BEGIN
    IF NOT coalesce(has_function_privilege(caller, p_funcoid, 'EXECUTE'), false) THEN
        RAISE EXCEPTION '%: function % is none the caller may execute', p_function, p_funcoid
            USING ERRCODE = 'insufficient_privilege', HINT = 'call the public pgj_* function, not the internal one';
    END IF;
    SELECT quote_ident(ns.nspname) || '.' || quote_ident(p.proname) INTO fn
    FROM pg_proc p JOIN pg_namespace ns ON ns.oid = p.pronamespace WHERE p.oid = p_funcoid AND p.prokind = 'f';
    IF fn IS NULL THEN -- made after this transaction's snapshot (REPEATABLE READ), or no function
        RAISE EXCEPTION '%: function % is not one this transaction sees (made after it began?), or not a function', p_function, p_funcoid
            USING ERRCODE = 'serialization_failure', HINT = 'run the transaction again';
    END IF;
    IF coalesce(cardinality(p_names), 0) <> n OR coalesce(cardinality(p_regs), 0) <> n THEN
        RAISE EXCEPTION '%: % argument types but % names and % reg* values', p_function, n,
            coalesce(cardinality(p_names), 0), coalesce(cardinality(p_regs), 0)
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    SELECT string_agg(coalesce(format_type(t.t, NULL), t.t::text), ', ') INTO stray
    FROM unnest(p_types) t(t) LEFT JOIN pg_type ty ON ty.oid = t.t LEFT JOIN pg_namespace ns ON ns.oid = ty.typnamespace
    WHERE ty.oid IS NULL OR ty.typtype = 'p' OR ns.nspname ~ '^pg_(toast_)?temp_'
       OR NOT has_type_privilege(caller, t.t, 'USAGE')
       -- pg_upgrade refuses tables of aclitem values (their format changed in PostgreSQL 16)
       OR t.t IN ('aclitem'::regtype, 'aclitem[]'::regtype);
    IF stray IS NOT NULL THEN
        RAISE EXCEPTION '%: an argument of type % cannot be kept (a pseudo-type, a temporary type, aclitem, or one role % may not use)',
            p_function, stray, pg_get_userbyid(caller)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'pass values of definite, lasting types';
    END IF;
    schema := pgjobs.pgj_call_space_(p_function, caller);
    FOR i IN 1 .. n LOOP
        reg := pgjobs.pgj_type_regbase_(p_types[i]);
        IF reg IS NOT NULL THEN
            refused := pgjobs.pgj_call_reg_refused_(caller, reg, p_regs[i]);
            IF refused IS NOT NULL THEN
                RAISE EXCEPTION '%: argument % (%, OID %) %', p_function, i, reg, p_regs[i], refused
                    USING ERRCODE = 'insufficient_privilege', HINT = 'pass an object the role may look up by name';
            END IF;
            exprs := exprs || (coalesce(quote_literal(p_regs[i]::text), 'NULL') || '::pg_catalog.' || reg::text);
        ELSIF pgjobs.pgj_type_holds_reg_(p_types[i]) THEN
            -- reg* values inside an array, a row or a range would go into the table unpinned (and
            -- such a table keeps pg_upgrade from running): only a NULL is kept, in the view (the
            -- caller checked that it is one)
            exprs := exprs || ('NULL::' || format_type(p_types[i], -1));
        ELSE
            kept := kept || p_types[i];
            copies := copies || ('a' || i);
            exprs := exprs || ('a.a' || cardinality(kept));
        END IF;
        exprs[i] := CASE WHEN i = n AND p_variadic THEN 'VARIADIC ' ELSE '' END
                    || coalesce(quote_ident(p_names[i]) || ' => ', '') || exprs[i];
    END LOOP;
    body := format('SELECT (%s(%s)) IS NULL AS pgj_call_', fn, array_to_string(exprs, ', '));
    IF cardinality(kept) > 0 THEN
        tab := 'args_' || md5(array_to_string(kept, ','));
        args := format('%I.%I', schema, tab);
        FOR attempt IN 1 .. 3 LOOP
            made := to_regclass(args); -- the catalog as this session sees it now
            IF made IS NOT NULL THEN
                -- not locked here: LOCK TABLE on what its role made a view (PostgreSQL 15 lets it)
                -- would lock what that view reads, as the definer; the view made below locks it
                EXIT;
            ELSE
                BEGIN
                    EXECUTE format('CREATE TABLE %s (id text COLLATE "C" PRIMARY KEY%s)', args,
                        (SELECT string_agg(format(', a%s %s', k.i, format_type(k.t, -1)), '' ORDER BY k.i) FROM unnest(kept) WITH ORDINALITY k(t, i)));
                    -- the owner's: what runs as the table's owner (ANALYZE runs a range type's
                    -- subtype_diff) runs as the role whose calls pass those types
                    EXECUTE format('ALTER TABLE %s OWNER TO %I', args, pg_get_userbyid(caller));
                    PERFORM pgjobs.pgj_call_acl_clear_('TABLE', args, c.relacl, c.relowner) FROM pg_class c WHERE c.oid = args::regclass;
                    EXIT;
                EXCEPTION WHEN duplicate_table OR unique_violation THEN
                    NULL; -- made meanwhile by the role's other session: used
                END;
            END IF;
            IF attempt = 3 THEN
                RAISE EXCEPTION '%: the table of role %''s call arguments % was made or dropped by another session meanwhile', p_function, pg_get_userbyid(caller), args
                    USING ERRCODE = 'serialization_failure', HINT = 'run the transaction again';
            END IF;
        END LOOP;
        made := to_regclass(args);
        IF made IS NULL OR NOT EXISTS (SELECT FROM pg_class c WHERE c.oid = made) THEN
            RAISE EXCEPTION '%: the table of role %''s call arguments % was made or dropped by another session meanwhile', p_function, pg_get_userbyid(caller), args
                USING ERRCODE = 'serialization_failure', HINT = 'run the transaction again';
        END IF;
        IF NOT EXISTS (SELECT FROM pg_class c
                       WHERE c.oid = made AND c.relkind = 'r' AND c.relowner = caller
                         AND ARRAY(SELECT a.atttypid FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum)
                             = 'text'::regtype::oid || kept
                         AND ARRAY(SELECT a.attname::text FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum)
                             = 'id'::text || ARRAY(SELECT 'a' || g FROM generate_series(1, cardinality(kept)) g)) THEN
            RAISE EXCEPTION '%: % is not a table of role %''s call arguments as pgjobs makes them', p_function, args, pg_get_userbyid(caller)
                USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'drop it (its owner may): pgjobs makes it again';
        END IF;
        copied := array_to_string(copies, ', ');
        body := body || format(' FROM ONLY %s a WHERE a.id OPERATOR(pg_catalog.=) %L::pg_catalog.text', args, hex);
    END IF;
    BEGIN
        EXECUTE format('CREATE VIEW %I.%I AS ', schema, 'call_' || hex) || body;
    EXCEPTION WHEN undefined_table THEN -- the agent dropped the table, which no view read, meanwhile
        RAISE EXCEPTION '%: the table of role %''s call arguments % was dropped by the agent meanwhile', p_function, pg_get_userbyid(caller), args
            USING ERRCODE = 'serialization_failure', HINT = 'run the transaction again';
    END;
    EXECUTE format('ALTER VIEW %I.%I OWNER TO %I', schema, 'call_' || hex, pg_get_userbyid(caller));
    PERFORM pgjobs.pgj_call_acl_clear_('TABLE', format('%I.%I', schema, 'call_' || hex), c.relacl, c.relowner)
    FROM pg_class c WHERE c.oid = format('%I.%I', schema, 'call_' || hex)::regclass;
    IF (SELECT substring(r.ev_action::text FROM ':targetList \(\{TARGETENTRY :expr \{NULLTEST :arg \{FUNCEXPR :funcid ([0-9]+) ')::oid
        FROM pg_rewrite r WHERE r.ev_class = format('%I.%I', schema, 'call_' || hex)::regclass) IS DISTINCT FROM p_funcoid THEN
        RAISE EXCEPTION '%: the call of % with its arguments kept calls another function', p_function, p_funcoid::regprocedure
            USING ERRCODE = 'serialization_failure', HINT = 'an overload of the function was made meanwhile: run the transaction again';
    END IF;
    view := schema || '.call_' || hex;
END
$$;

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
    FOR gone IN SELECT g.tab, g.ids, format('%I.%I', n.nspname, c.relname) AS name
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
