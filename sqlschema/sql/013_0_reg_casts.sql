-- pgjobs schema version 13: a call that makes a reg* value from text at each run is refused. The
-- attacker review of version 12 passed 'stage'::text to bob's function of a regclass parameter:
-- the cast from text to regclass is implicit, made when the job runs, and nothing depended on the
-- caller's temporary table stage when the call was set, so the check of version 12 let it through;
-- at the run, alice's public.stage, with a trigger, took its place and her trigger ran as bob.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_unstable_: as version 12's, and it refuses a reg* value the call makes from another
-- type (a cast or a coercion in the call's tree whose type is a reg* type, not a constant's).
CREATE OR REPLACE FUNCTION pgjobs.pgj_call_unstable_(p_view oid) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
SET jit = off -- the recursive CTEs' estimates are high enough for JIT, which costs tens of ms here
AS $$
    WITH RECURSIVE
    reg(t) AS (
        SELECT to_regtype(n) FROM unnest(ARRAY['pg_catalog.regclass', 'pg_catalog.regtype', 'pg_catalog.regproc',
            'pg_catalog.regprocedure', 'pg_catalog.regoper', 'pg_catalog.regoperator', 'pg_catalog.regconfig', 'pg_catalog.regdictionary',
            'pg_catalog.regnamespace', 'pg_catalog.regrole', 'pg_catalog.regcollation']) n),
    tree(t) AS (
        -- the call's query tree without the function's result type, which is no value of the call
        SELECT regexp_replace(w.ev_action::text, '(\{FUNCEXPR :funcid [0-9]+ ):funcresulttype [0-9]+ ', '\1')
        FROM pg_rewrite w WHERE w.ev_class = p_view),
    computed(t) AS (
        -- the types of what is not a constant: casts, arrays, rows, ... made at each run
        SELECT DISTINCT m[1]::oid FROM tree, regexp_matches(tree.t, ':(?!consttype )[a-z_]*type(?:id)? ([0-9]+)', 'gi') m),
    named(t, valued) AS (
        -- every type of the tree but those of constants, and the constants' types: a NULL holds no
        -- value (its type's name is read again all the same)
        SELECT n.t, true FROM computed n
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
        (SELECT 'makes ' || string_agg(DISTINCT format_type(c.t, NULL), ', ') || ' values from text at each run (''stage''::text to a regclass parameter): the run would look their names up again, which cannot be checked when the call is set'
         FROM computed c WHERE c.t IN (SELECT t FROM reg)),
        (SELECT 'uses ' || coalesce(string_agg(DISTINCT what, ', ') FILTER (WHERE NOT schema), string_agg(DISTINCT what, ', '))
                || ' of a temporary schema: a job''s call may not, as the run would look its name up again in another session'
         FROM temporary),
        (SELECT 'passes ' || string_agg(DISTINCT format_type(h.t, NULL), ', ') || ' values inside an array, a row or a range: the run would look their names up again, which cannot be checked when the call is set'
         FROM types h
         WHERE h.held AND h.valued AND h.t IN (SELECT t FROM reg)))
$$;
