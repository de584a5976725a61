-- pgjobs schema version 10: what a job's call names is looked for everywhere it can hide. Version 9
-- refused a call whose view depends on an object of a temporary schema; a review found calls that
-- name one without such a dependency, each stored with a name the run looks up again:
--   ARRAY[]::pg_temp.tdom[], an empty array, records no dependency on its type and is stored as
--     ARRAY[]::tdom[]: another role's public.tdom and a cast of its own from tdom[] then ran its
--     code as the owner of a job of a polymorphic function;
--   '{pg_temp.stage}'::regclass[] and '(pg_temp.stage,1)'::bob.target (a row with a regclass field)
--     record nothing on the table and are stored as '{stage}' and '(stage,1)': another role's
--     public.stage, with a trigger, took its place for the owner's function that deleted from it;
--   'public.pf2(pg_temp.tdom)'::regprocedure records the function, not its parameter's type: the
--     function goes with the session, and another role's public.pf2(public.tdom) took its place.
-- So the refusal now follows what the call names to what that depends on, with the types named
-- anywhere in the call's tree and the types they are made of, and refuses a constant whose type
-- holds values of a reg* type (regclass, regtype, regprocedure, ...) inside an array, a row or a
-- range: their names are text the run reads again, and cannot be checked when the call is set.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_unstable_ tells what in the call of the temporary view p_view (made by
-- pgj_call_resolve_) the run would not find again as it was when the call was set, or NULL:
--   * any object of a temporary schema (the caller's, whose names are stored bare, or another
--     session's, which passes to whichever session gets its number) among what the view depends
--     on, the types its query tree names (an empty array records no dependency on its type), and,
--     transitively, what those depend on and the types they are made of;
--   * a type that holds reg* values inside an array, a row or a range: a reg* constant records a
--     dependency on its object, checked above, but one inside a value of another type does not.
-- A domain is read as its base type: a domain over regclass holds one regclass, not values of it.
CREATE FUNCTION pgjobs.pgj_call_unstable_(p_view oid) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off -- the recursive CTEs' estimates are high enough for JIT, which costs tens of ms here
AS $$
    WITH RECURSIVE
    named(t) AS (
        SELECT DISTINCT m[1]::oid
        FROM pg_rewrite w, regexp_matches(w.ev_action::text, ':[a-z_]*type(?:id)? ([0-9]+)', 'gi') m
        WHERE w.ev_class = p_view),
    types(t, held) AS (
        SELECT ty.oid, false FROM named n JOIN pg_type ty ON ty.oid = n.t
        UNION
        SELECT s.t, s.held
        FROM types c JOIN pg_type ty ON ty.oid = c.t,
        LATERAL (SELECT ty.typbasetype, c.held WHERE ty.typbasetype <> 0
                 UNION ALL SELECT ty.typelem, true WHERE ty.typelem <> 0
                 UNION ALL SELECT a.atttypid, true FROM pg_attribute a
                           WHERE ty.typrelid <> 0 AND a.attrelid = ty.typrelid AND a.attnum > 0 AND NOT a.attisdropped
                 UNION ALL SELECT r.rngsubtype, true FROM pg_range r WHERE r.rngtypid = ty.oid) s(t, held)),
    objects(classid, objid) AS (
        SELECT d.refclassid, d.refobjid
        FROM pg_depend d JOIN pg_rewrite w ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid
        WHERE w.ev_class = p_view AND NOT (d.refclassid = 'pg_class'::regclass AND d.refobjid = p_view)
        UNION
        SELECT 'pg_type'::regclass, t FROM types
        UNION
        SELECT d.refclassid, d.refobjid FROM objects o JOIN pg_depend d ON d.classid = o.classid AND d.objid = o.objid),
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
         WHERE h.held AND h.t IN (SELECT to_regtype(n) FROM unnest(ARRAY['pg_catalog.regclass', 'pg_catalog.regtype', 'pg_catalog.regproc',
                'pg_catalog.regprocedure', 'pg_catalog.regoper', 'pg_catalog.regoperator', 'pg_catalog.regconfig', 'pg_catalog.regdictionary',
                'pg_catalog.regnamespace', 'pg_catalog.regrole', 'pg_catalog.regcollation']) n)))
$$;

-- pgj_call_resolve_ resolves a job's function call as the caller would run it (see version 2):
-- as version 9's, with version 10's look at what the call names (pgj_call_unstable_).
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
    -- Written back with standard_conforming_strings on, as the agent reads every call.
    def := pg_get_viewdef(view_oid);
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

