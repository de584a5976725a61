-- pgjobs schema version 12: the attacker review of version 10 found three more ways a call's
-- names or constants were read at a run otherwise than when the call was set:
--   * a multirange over a range of regclass ('{[pg_temp.stage,pg_temp.stage]}'::bob.relmultirange)
--     held reg* values the walk of version 10 did not see: it never went from a multirange to its
--     range. Alice's trigger on public.stage ran as bob, and as a superuser made her one;
--   * a permanent range whose multirange is temporary (CREATE TYPE public.r AS RANGE (subtype = int,
--     multirange_type_name = pg_temp.rm)) goes with the session, and another role's domain of its
--     name ran its CHECK as bob: the walk followed only what an object depends on, not what is part
--     of it;
--   * constants written back in the caller's DateStyle, IntervalStyle and extra_float_digits:
--     '2026-01-02'::date under 'SQL, DMY' was stored as '02/01/2026' and run as 1 February; a
--     float8 under extra_float_digits = -15 lost its digits.
-- It also refused calls it need not: a function returning regclass[] or a table with a regclass
-- column, and NULL for a regclass[] parameter, hold no reg* value of the call.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_unstable_: as version 10's, with a multirange read as holding its range, what is part of
-- an object followed as well as what it depends on, and only the call's constants that are not NULL
-- looked at for reg* values inside them (the function's result type is not a value of the call).
CREATE OR REPLACE FUNCTION pgjobs.pgj_call_unstable_(p_view oid) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off -- the recursive CTEs' estimates are high enough for JIT, which costs tens of ms here
AS $$
    WITH RECURSIVE
    tree(t) AS (
        -- the call's query tree without the function's result type, which is no value of the call
        SELECT regexp_replace(w.ev_action::text, '(\{FUNCEXPR :funcid [0-9]+ ):funcresulttype [0-9]+ ', '\1')
        FROM pg_rewrite w WHERE w.ev_class = p_view),
    named(t, valued) AS (
        -- every type of the tree but those of constants, and the constants' types: a NULL holds no
        -- value (its type's name is read again all the same)
        SELECT m[1]::oid, true FROM tree, regexp_matches(tree.t, ':(?!consttype )[a-z_]*type(?:id)? ([0-9]+)', 'gi') m
        UNION
        SELECT m[1]::oid, m[2] = 'false' FROM tree, regexp_matches(tree.t, '\{CONST :consttype ([0-9]+) [^{}]*?:constisnull (true|false)', 'g') m),
    types(t, held, valued) AS (
        SELECT ty.oid, false, n.valued FROM named n JOIN pg_type ty ON ty.oid = n.t
        UNION
        SELECT s.t, s.held, c.valued
        FROM types c JOIN pg_type ty ON ty.oid = c.t,
        LATERAL (SELECT ty.typbasetype, c.held WHERE ty.typbasetype <> 0
                 UNION ALL SELECT ty.typelem, true WHERE ty.typelem <> 0
                 UNION ALL SELECT a.atttypid, true FROM pg_attribute a
                           WHERE ty.typrelid <> 0 AND a.attrelid = ty.typrelid AND a.attnum > 0 AND NOT a.attisdropped
                 UNION ALL SELECT r.rngsubtype, true FROM pg_range r WHERE r.rngtypid = ty.oid
                 -- a multirange holds its range (rngmultitypid: PostgreSQL 14 and later)
                 UNION ALL SELECT r.rngtypid, true FROM pg_range r WHERE (to_jsonb(r) ->> 'rngmultitypid')::oid = ty.oid) s(t, held)),
    objects(classid, objid) AS (
        SELECT d.refclassid, d.refobjid
        FROM pg_depend d JOIN pg_rewrite w ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
        WHERE w.ev_class = p_view AND NOT (d.refclassid = 'pg_class'::regclass AND d.refobjid = p_view)
        UNION
        SELECT 'pg_type'::regclass, t FROM types
        UNION
        -- what each depends on, and what is part of it (a range's multirange, a table's row type),
        -- which goes with it: a permanent range whose multirange is temporary is dropped with it
        SELECT n.classid, n.objid FROM objects o,
        LATERAL (SELECT d.refclassid, d.refobjid FROM pg_depend d WHERE d.classid = o.classid AND d.objid = o.objid
                 UNION ALL
                 SELECT d.classid, d.objid FROM pg_depend d
                 WHERE d.refclassid = o.classid AND d.refobjid = o.objid AND d.deptype = 'i') n(classid, objid)),
    temporary(what, schema) AS (
        SELECT i.type || ' ' || i.identity, o.classid = 'pg_namespace'::regclass
        FROM objects o, LATERAL pg_identify_object(o.classid, o.objid, 0) i
        WHERE CASE WHEN o.classid = 'pg_namespace'::regclass
                   THEN EXISTS (SELECT FROM pg_namespace n WHERE n.oid = o.objid AND n.nspname ~ '^pg_(toast_)?temp_')
                   ELSE i.schema ~ '^pg_(toast_)?temp_' OR i.schema = 'pg_temp' END)
    SELECT coalesce(
        (SELECT 'uses ' || coalesce(string_agg(DISTINCT what, ', ') FILTER (WHERE NOT schema), string_agg(DISTINCT what, ', '))
                || ' of a temporary schema: a job''s call may not, as the run would look its name up again in another session'
         FROM temporary),
        (SELECT 'passes ' || string_agg(DISTINCT format_type(h.t, NULL), ', ') || ' values inside an array, a row or a range: the run would look their names up again, which cannot be checked when the call is set'
         FROM types h
         WHERE h.held AND h.valued AND h.t IN (SELECT to_regtype(n) FROM unnest(ARRAY['pg_catalog.regclass', 'pg_catalog.regtype', 'pg_catalog.regproc',
                'pg_catalog.regprocedure', 'pg_catalog.regoper', 'pg_catalog.regoperator', 'pg_catalog.regconfig', 'pg_catalog.regdictionary',
                'pg_catalog.regnamespace', 'pg_catalog.regrole', 'pg_catalog.regcollation']) n)))
$$;

-- pgj_call_resolve_: as version 10's, the call written back with pg_dump's settings for constants.
CREATE OR REPLACE FUNCTION pgjobs.pgj_call_resolve_(p_function text, p_argno int, p_call text, p_path text,
    OUT call text, OUT funcoid oid)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
AS $$
DECLARE
    checked text := pgjobs.pgj_call_syntax_(p_function, p_argno, p_call);
    -- IS NULL: a view has no column of type void, the result of most job functions.
    stmt text := 'CREATE TEMPORARY VIEW pgj_resolve_call_ AS SELECT (' || checked || ') IS NULL AS pgj_call_';
    view_oid oid;
    def text;
    fn record;
    unstable text;
    saved text[];
BEGIN
    IF to_regclass('pg_temp.pgj_resolve_call_') IS NOT NULL THEN
        DROP VIEW pg_temp.pgj_resolve_call_;
    END IF;
    BEGIN
        PERFORM set_config('search_path', p_path, true);
        EXECUTE stmt;
        PERFORM set_config('search_path', 'pg_catalog, pg_temp', true);
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION '%: argument % (function call) % does not resolve: %', p_function, p_argno, quote_literal(left(checked, 200)), SQLERRM
            USING ERRCODE = SQLSTATE, HINT = 'create the function first, or fix its name, schema or arguments';
    END;
    view_oid := 'pg_temp.pgj_resolve_call_'::regclass;
    SELECT substring(r.ev_action::text FROM ':targetList \(\{TARGETENTRY :expr \{NULLTEST :arg \{FUNCEXPR :funcid ([0-9]+) ')::oid
    INTO funcoid FROM pg_rewrite r WHERE r.ev_class = view_oid;
    -- Written back with standard_conforming_strings on, as the agent reads every call, and with the
    -- constants in forms every session reads the same (pg_dump's settings): the caller's DateStyle
    -- wrote '2026-01-02' as '02/01/2026', which the owner's sessions read as 1 February. For the
    -- rest of the caller's transaction the settings are put back as they were.
    saved := ARRAY[current_setting('DateStyle'), current_setting('IntervalStyle'), current_setting('extra_float_digits')];
    PERFORM set_config('DateStyle', 'ISO, MDY', true), set_config('IntervalStyle', 'postgres', true),
            set_config('extra_float_digits', '3', true);
    def := pg_get_viewdef(view_oid);
    PERFORM set_config('DateStyle', saved[1], true), set_config('IntervalStyle', saved[2], true),
            set_config('extra_float_digits', saved[3], true);
    unstable := pgjobs.pgj_call_unstable_(view_oid);
    DROP VIEW pg_temp.pgj_resolve_call_;
    IF unstable IS NOT NULL THEN
        RAISE EXCEPTION '%: argument % (function call) % %', p_function, p_argno, quote_literal(left(checked, 200)), unstable
            USING ERRCODE = 'invalid_parameter_value',
            HINT = 'create the function and the types and objects its call names in a schema that lasts, and pass names in arrays or rows as text';
    END IF;
    IF funcoid IS NULL THEN
        RAISE EXCEPTION '%: argument % (function call) % is not a call of a function', p_function, p_argno, quote_literal(left(checked, 200))
            USING ERRCODE = 'wrong_object_type', HINT = 'a job runs a function: not an aggregate, a procedure or an expression such as COALESCE';
    END IF;
    IF NOT has_function_privilege(current_user, funcoid, 'EXECUTE') THEN
        RAISE EXCEPTION '%: argument %: permission denied for function %', p_function, p_argno, funcoid::regprocedure
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    call := substring(def FROM '^\s*SELECT\s+\((.*) IS NULL\)\s+AS\s+pgj_call_;?\s*$');
    SELECT quote_ident(n.nspname) AS nsp, quote_ident(p.proname) AS pro INTO fn
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = funcoid;
    IF starts_with(call, fn.pro || '(') THEN
        call := fn.nsp || '.' || call; -- visible without its schema (pg_catalog): qualify it too
    END IF;
    IF call IS NULL OR NOT starts_with(call, fn.nsp || '.' || fn.pro || '(') THEN
        RAISE EXCEPTION '%: argument % (function call) %: cannot write it back schema-qualified (%)', p_function, p_argno, quote_literal(left(checked, 200)), def
            USING ERRCODE = 'internal_error';
    END IF;
END
$$;

