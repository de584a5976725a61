-- pgjobs schema version 14: the upgrade reads every stored call again, and stops the jobs that the
-- scan of version 11 let through though another role could take over what they name at a run. The
-- code review of version 11 ran bob's trigger as alice, after the upgrade, through three forms:
--   ('stage'::text)::regclass       a reg* value made from text at each run (refused when set
--                                   since version 13, stored by versions 1 to 12);
--   '{stage}'::public.tabs[]        an array of a domain over regclass: a schema-qualified cast
--                                   was not looked at;
--   '{public,pg_temp_3}'::regnamespace[]  a temporary schema after the first element.
-- Version 11's two known gaps are closed as well: a temporary type named double (written bare, as
-- format_type writes double precision's first word), and a type or object of another session's
-- temporary schema (pg_temp_3.tdom, 'pg_temp_3.stage'::regclass), which a superuser could name.
--
-- As in version 11 no call is parsed (that runs input functions, a domain's CHECK, as the
-- superuser who upgrades): the scan reads the call's text and looks names up in the catalogs.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_type_reg_ tells whether values of type p_type hold reg* values, which are names looked up
-- again at each run: leaf is the reg* type (with [] when an array) that p_type is through domains
-- and arrays alone, whose values a constant spells out; inside is true when a row or a range of
-- p_type holds one (which versions 10 and later refuse when a call is set).
CREATE FUNCTION pgjobs.pgj_type_reg_(p_type oid, OUT leaf text, OUT inside boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE walk(t, arr, inside) AS (
        SELECT p_type, false, false
        UNION
        SELECT s.t, s.arr, s.inside
        FROM walk w JOIN pg_type y ON y.oid = w.t,
        LATERAL (SELECT y.typbasetype, w.arr, w.inside WHERE y.typbasetype <> 0
                 UNION ALL SELECT y.typelem, true, w.inside WHERE y.typelem <> 0 AND y.typlen = -1
                 UNION ALL SELECT a.atttypid, w.arr, true FROM pg_attribute a
                           WHERE y.typrelid <> 0 AND a.attrelid = y.typrelid AND a.attnum > 0 AND NOT a.attisdropped
                 UNION ALL SELECT r.rngsubtype, w.arr, true FROM pg_range r WHERE r.rngtypid = y.oid
                 -- a multirange holds its range (rngmultitypid: PostgreSQL 14 and later)
                 UNION ALL SELECT r.rngtypid, w.arr, true FROM pg_range r
                           WHERE (to_jsonb(r) ->> 'rngmultitypid')::oid = y.oid) s(t, arr, inside))
    SELECT (array_agg(format_type(w.t, NULL) || CASE WHEN w.arr THEN '[]' ELSE '' END) FILTER (WHERE NOT w.inside))[1],
           coalesce(bool_or(w.inside), false)
    FROM walk w JOIN pg_type y ON y.oid = w.t
    WHERE y.typnamespace = 'pg_catalog'::regnamespace
      AND y.typname IN ('regclass', 'regcollation', 'regconfig', 'regdictionary', 'regnamespace', 'regoper',
                        'regoperator', 'regproc', 'regprocedure', 'regtype')
$$;

-- pgj_call_lost_ returns why stored call p_call names something that another role could take over
-- at a run, or NULL when nothing is found. It reads the call as PostgreSQL writes a call back
-- (strings in single quotes with '' for a quote, identifiers in double quotes where they must be)
-- and looks at the type of each cast:
--   - a type written without a schema must be of pg_catalog: it was of the temporary schema
--     otherwise (double precision is the one type whose spelling to_regtype does not read whole);
--   - a type of a temporary schema (another session's pg_temp_3) is refused;
--   - a type holding reg* values in a row or a range is refused;
--   - a type that is a reg* type through domains and arrays must follow a string constant or
--     NULL (a value made at each run, ('stage'::text)::regclass, is refused), and the constant
--     must name no temporary schema and read again, by the reg* type's own input function (which
--     only looks names up), in pg_catalog and the upgrading session's empty temporary schema.
CREATE OR REPLACE FUNCTION pgjobs.pgj_call_lost_(p_call text) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
AS $$
DECLARE
    i int := 1;
    n int := length(p_call);
    j int;
    k int;
    lit text;
    lit_end int := 0; -- the position just after the last string constant
    ident text := '^("(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_$]*)';
    temp text := '(^|[^A-Za-z0-9_$])"?pg_(toast_)?temp'; -- a temporary schema's name in a constant
    temp_schema text := '^"?pg_(toast_)?temp';
    name text;
    spelled text;
    typ oid;
    brackets text;
    leaf text;
    inside boolean;
BEGIN
    WHILE i <= n LOOP
        IF substr(p_call, i, 1) = '''' THEN
            lit := '';
            j := i + 1;
            LOOP
                k := strpos(substr(p_call, j), '''');
                IF k = 0 THEN
                    RETURN 'it has an unterminated string';
                END IF;
                lit := lit || substr(p_call, j, k - 1);
                j := j + k;
                EXIT WHEN substr(p_call, j, 1) <> '''';
                lit := lit || '''';
                j := j + 1;
            END LOOP;
            i := j;
            lit_end := j;
        ELSIF substr(p_call, i, 1) = '"' THEN
            name := substring(substr(p_call, i) FROM '^"(?:[^"]|"")*"');
            IF name IS NULL THEN
                RETURN 'it has an unterminated quoted name';
            END IF;
            i := i + length(name);
        ELSIF substr(p_call, i, 2) = '::' THEN
            name := substring(substr(p_call, i + 2) FROM ident);
            IF name IS NULL THEN
                RETURN 'it has a cast without a type name';
            END IF;
            k := i + 2 + length(name);
            IF substr(p_call, k, 1) = '.' THEN
                spelled := substring(substr(p_call, k + 1) FROM ident);
                IF spelled IS NULL THEN
                    RETURN 'it has a cast to ' || name || '. without a type name';
                END IF;
                IF name ~ temp_schema THEN
                    RETURN 'it names type ' || name || '.' || spelled || ' of a temporary schema';
                END IF;
                spelled := name || '.' || spelled;
                typ := to_regtype(spelled); -- NULL when gone: the run fails, there is nothing to take over
            ELSE
                spelled := name;
                IF name = 'double' AND substr(p_call, k, 10) = ' precision' THEN
                    spelled := 'double precision';
                END IF;
                typ := to_regtype(spelled);
                IF typ IS NULL THEN
                    RETURN 'it names type ' || name || ' without a schema, which pg_catalog does not have: an object of its owner''s temporary schema when the call was set';
                END IF;
            END IF;
            k := i + 2 + length(spelled);
            brackets := coalesce(substring(substr(p_call, k) FROM '^((?:\[\])+)'), '');
            SELECT r.leaf, r.inside INTO leaf, inside FROM pgjobs.pgj_type_reg_(typ) r;
            IF inside THEN
                RETURN 'it passes reg* values inside a row or a range of type ' || spelled || ', whose names are looked up at each run';
            END IF;
            IF leaf IS NOT NULL AND lit_end = i THEN
                IF lit ~ temp THEN
                    RETURN 'its constant ' || quote_literal(lit) || '::' || spelled || brackets || ' names a temporary schema';
                END IF;
                BEGIN
                    EXECUTE format('SELECT %L::pg_catalog.%s%s', lit, leaf,
                                   CASE WHEN brackets <> '' AND leaf NOT LIKE '%[]' THEN '[]' ELSE '' END);
                EXCEPTION WHEN OTHERS THEN
                    RETURN 'its constant ' || quote_literal(lit) || '::' || spelled || brackets || ' names what pg_catalog does not have without a schema: an object of its owner''s temporary schema when the call was set';
                END;
            ELSIF leaf IS NOT NULL AND NOT (substr(p_call, i - 4, 4) = 'NULL' AND substr(p_call, i - 5, 1) !~ '[A-Za-z0-9_$"]') THEN
                RETURN 'it makes ' || spelled || brackets || ' values from another value at each run, looked up by name in its owner''s search path';
            END IF;
            i := k;
        ELSE
            i := i + 1;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

DO $$
DECLARE
    j record;
BEGIN
    FOR j IN SELECT jobid, jobname, jobfunction, pgjobs.pgj_call_lost_(jobfunction) AS lost
             FROM pgjobs.pgj_job_ WHERE jobfuncoid IS NOT NULL ORDER BY jobid LOOP
        CONTINUE WHEN j.lost IS NULL;
        UPDATE pgjobs.pgj_job_ SET jobfuncoid = NULL WHERE jobid = j.jobid;
        RAISE WARNING 'job % (call %) is stopped: %. It does not run until its owner sets the call again with pgj_update_job',
            j.jobname, j.jobfunction, j.lost;
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION pgjobs.pgj_type_reg_(oid) FROM PUBLIC;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_lost_(text) FROM PUBLIC;
