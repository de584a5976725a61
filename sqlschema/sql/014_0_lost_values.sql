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

-- pgj_reg_reads_ reads text p_lit as a value of reg* type p_type (an array of them when p_array)
-- in this session, with the type's own input function (which only looks names up, and reads '-'
-- and numbers as the run does), and returns why it does not pin what it names, or NULL: it does
-- not read (an object of the owner's temporary schema when the call was set, or one dropped
-- since), or it reads as an object of pg_catalog that is not built in (an extension's, installed
-- there by a role that may drop it and take the name: the attacker review of version 14).
-- Static casts, whose plans plpgsql keeps: a call may hold hundreds of constants.
CREATE FUNCTION pgjobs.pgj_reg_reads_(p_lit text, p_type text, p_array boolean) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    typ text := p_type || (CASE WHEN p_array THEN '[]' ELSE '' END);
    oids oid[];
    catalog regclass;
BEGIN
    BEGIN
        CASE typ
        WHEN 'regclass' THEN oids := ARRAY[regclassin(p_lit::cstring)]; catalog := 'pg_class';
        WHEN 'regclass[]' THEN oids := p_lit::regclass[]::oid[]; catalog := 'pg_class';
        WHEN 'regcollation' THEN oids := ARRAY[regcollationin(p_lit::cstring)]; catalog := 'pg_collation';
        WHEN 'regcollation[]' THEN oids := p_lit::regcollation[]::oid[]; catalog := 'pg_collation';
        WHEN 'regconfig' THEN oids := ARRAY[regconfigin(p_lit::cstring)]; catalog := 'pg_ts_config';
        WHEN 'regconfig[]' THEN oids := p_lit::regconfig[]::oid[]; catalog := 'pg_ts_config';
        WHEN 'regdictionary' THEN oids := ARRAY[regdictionaryin(p_lit::cstring)]; catalog := 'pg_ts_dict';
        WHEN 'regdictionary[]' THEN oids := p_lit::regdictionary[]::oid[]; catalog := 'pg_ts_dict';
        WHEN 'regnamespace' THEN oids := ARRAY[regnamespacein(p_lit::cstring)]; catalog := 'pg_namespace';
        WHEN 'regnamespace[]' THEN oids := p_lit::regnamespace[]::oid[]; catalog := 'pg_namespace';
        WHEN 'regoper' THEN oids := ARRAY[regoperin(p_lit::cstring)]; catalog := 'pg_operator';
        WHEN 'regoper[]' THEN oids := p_lit::regoper[]::oid[]; catalog := 'pg_operator';
        WHEN 'regoperator' THEN oids := ARRAY[regoperatorin(p_lit::cstring)]; catalog := 'pg_operator';
        WHEN 'regoperator[]' THEN oids := p_lit::regoperator[]::oid[]; catalog := 'pg_operator';
        WHEN 'regproc' THEN oids := ARRAY[regprocin(p_lit::cstring)]; catalog := 'pg_proc';
        WHEN 'regproc[]' THEN oids := p_lit::regproc[]::oid[]; catalog := 'pg_proc';
        WHEN 'regprocedure' THEN oids := ARRAY[regprocedurein(p_lit::cstring)]; catalog := 'pg_proc';
        WHEN 'regprocedure[]' THEN oids := p_lit::regprocedure[]::oid[]; catalog := 'pg_proc';
        WHEN 'regtype' THEN oids := ARRAY[regtypein(p_lit::cstring)]; catalog := 'pg_type';
        WHEN 'regtype[]' THEN oids := p_lit::regtype[]::oid[]; catalog := 'pg_type';
        END CASE;
    EXCEPTION WHEN OTHERS THEN
        RETURN 'names what is not found by its name alone: an object of its owner''s temporary schema when the call was set, or one dropped since';
    END;
    -- an object of a temporary schema, whatever the constant's spelling ('PG_TEMP_4.stage' reads
    -- as pg_temp_4's): another session's, or the upgrading session's own
    IF EXISTS (SELECT FROM unnest(oids) o, LATERAL pg_identify_object(catalog, o, 0) i
               WHERE i.schema ~ '^pg_(toast_)?temp'
                  OR (catalog = 'pg_namespace'::regclass AND i.identity ~ '^"?pg_(toast_)?temp')) THEN
        RETURN 'names an object of a temporary schema, which the run would look up in another session';
    END IF;
    IF EXISTS (SELECT FROM unnest(oids) o, LATERAL pg_identify_object(catalog, o, 0) i
               WHERE o >= 16384 AND i.schema = 'pg_catalog') THEN
        RETURN 'names an object of pg_catalog that is not built in (an extension''s, which a role may drop and so free its name)';
    END IF;
    RETURN NULL;
END
$$;

-- pgj_call_lost_ returns why stored call p_call names something that another role could take over
-- at a run, or NULL when nothing is found. It reads the call as PostgreSQL writes a call back
-- (strings in single quotes with '' for a quote, identifiers in double quotes where they must be;
-- no dollar quotes, no string prefixes such as E'') and looks at the type of each cast:
--   - a type written without a schema must be of pg_catalog: it was of the temporary schema
--     otherwise (double precision is the one type whose spelling to_regtype does not read whole);
--   - a type of a temporary schema (another session's pg_temp_3) is refused;
--   - a type holding reg* values in a row or a range is refused, but for a NULL;
--   - a type that is a reg* type through domains and arrays must follow a string constant, NULL,
--     a number in parentheses, or a reg* constant just read (('public.t'::regclass)::tabs): a value
--     made at each run, ('stage'::text)::regclass, is refused; the constant must name no temporary
--     schema and read again, by the reg* type's own input function (which only looks names up), in
--     pg_catalog and the upgrading session's empty temporary schema (pgj_reg_reads_).
-- Text that PostgreSQL does not write back (stored through the internal functions) is refused,
-- and an error reading it (to_regtype of what is no type name) stops the job too (the scan below).
-- pg_temp.pgj_type_walk_, which the scan makes, keeps what each type name is. The call is read
-- character by character from an array, each character once (substr of a long
-- text counts characters from its start: a call of 8192 characters took half a second).
CREATE OR REPLACE FUNCTION pgjobs.pgj_call_lost_(p_call text) RETURNS text
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
AS $$
DECLARE
    c text[] := string_to_array(p_call, NULL);
    n int := coalesce(array_length(c, 1), 0);
    i int := 1;
    j int;
    k int;
    lit text;
    lit_end int := 0; -- the position just after the last string constant
    reg_end int := 0; -- the position just after the last reg* constant read again
    -- a temporary schema's name in a constant, and as a type's schema
    temp text := '(^|[^A-Za-z0-9_$])"?pg_(toast_)?temp(_[0-9]+)?("|\.|,|\}|\(|\)|$)';
    temp_qualifier text := '(^|[^A-Za-z0-9_$])"?pg_(toast_)?temp(_[0-9]+)?"?\.'; -- one qualifying a name
    temp_schema text := '^"?pg_(toast_)?temp(_[0-9]+)?"?$';
    part text;
    parts text[];
    spelled text;
    typ oid;
    brackets text;
    leaf text;
    inside boolean;
    after_null boolean;
BEGIN
    WHILE i <= n LOOP
        IF c[i] = '''' OR c[i] = '"' THEN
            IF c[i] = '''' AND i > 1 AND c[i - 1] ~ '^[A-Za-z0-9_&]$' THEN
                RETURN 'it has a string with a prefix (' || c[i - 1] || '''...''), which PostgreSQL does not write back';
            END IF;
            -- a string or a quoted name, a doubled quote standing for one
            part := '';
            j := i + 1;
            LOOP
                IF j > n THEN
                    RETURN 'it has an unterminated ' || CASE WHEN c[i] = '''' THEN 'string' ELSE 'quoted name' END;
                END IF;
                IF c[j] = c[i] THEN
                    EXIT WHEN j = n OR c[j + 1] <> c[i];
                    j := j + 1;
                END IF;
                part := part || c[j];
                j := j + 1;
            END LOOP;
            i := j + 1;
            IF c[j] = '''' THEN
                lit := part;
                lit_end := i;
            END IF;
        ELSIF c[i] = '$' THEN
            RETURN 'it has a $ outside its strings and quoted names (a dollar-quoted string?), which PostgreSQL does not write back';
        ELSIF c[i] = ':' AND i < n AND c[i + 1] = ':' THEN
            -- the type's name: one identifier, or two with a dot (schema.name), each bare or quoted
            -- as quote_ident writes it; then double precision's second word, and brackets
            parts := '{}';
            j := i + 2;
            LOOP
                k := j;
                IF j <= n AND c[j] = '"' THEN
                    j := j + 1;
                    LOOP
                        IF j > n THEN
                            RETURN 'it has an unterminated quoted name';
                        END IF;
                        IF c[j] = '"' THEN
                            EXIT WHEN j = n OR c[j + 1] <> '"';
                            j := j + 1;
                        END IF;
                        j := j + 1;
                    END LOOP;
                    j := j + 1;
                ELSE
                    WHILE j <= n AND (c[j] ~ '^[A-Za-z_]$' OR (j > k AND c[j] ~ '^[0-9$]$')) LOOP
                        j := j + 1;
                    END LOOP;
                END IF;
                IF j = k THEN
                    RETURN 'it has a cast without a type name';
                END IF;
                part := '';
                FOR m IN k .. j - 1 LOOP
                    part := part || c[m];
                END LOOP;
                parts := parts || part;
                EXIT WHEN j > n OR c[j] <> '.' OR cardinality(parts) = 2;
                j := j + 1;
            END LOOP;
            IF cardinality(parts) = 2 AND parts[1] ~* temp_schema THEN
                RETURN 'it names type ' || parts[1] || '.' || parts[2] || ' of a temporary schema';
            END IF;
            spelled := array_to_string(parts, '.');
            IF spelled = 'double' AND j + 9 <= n AND c[j] = ' ' AND c[j + 1] = 'p' AND c[j + 2] = 'r' AND c[j + 3] = 'e'
               AND c[j + 4] = 'c' AND c[j + 5] = 'i' AND c[j + 6] = 's' AND c[j + 7] = 'i' AND c[j + 8] = 'o' AND c[j + 9] = 'n' THEN
                spelled := 'double precision';
                j := j + 10;
            END IF;
            brackets := '';
            WHILE j < n AND c[j] = '[' AND c[j + 1] = ']' LOOP
                brackets := brackets || '[]';
                j := j + 2;
            END LOOP;
            -- each type's name looked up, and its walk, once for all the jobs (the scan below makes
            -- the table): a role's 100 calls of 440 casts each to its own types took 32 s
            SELECT w.typ, w.leaf, w.inside INTO typ, leaf, inside FROM pg_temp.pgj_type_walk_ w WHERE w.name = spelled;
            IF NOT FOUND THEN
                typ := to_regtype(spelled); -- NULL for a qualified name gone: the run fails, there is nothing to take over
                SELECT r.leaf, r.inside INTO leaf, inside FROM pgjobs.pgj_type_reg_(typ) r;
                INSERT INTO pg_temp.pgj_type_walk_ (name, typ, leaf, inside) VALUES (spelled, typ, leaf, inside);
            END IF;
            IF typ IS NOT NULL AND cardinality(parts) = 2
               AND (SELECT n.nspname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace WHERE t.oid = typ) ~ '^pg_(toast_)?temp' THEN
                RETURN 'it names type ' || spelled || ' of a temporary schema';
            END IF;
            IF typ IS NULL AND cardinality(parts) = 1 THEN
                RETURN 'it names type ' || spelled || ' without a schema, which pg_catalog does not have: an object of its owner''s temporary schema when the call was set';
            ELSIF typ >= 16384 AND cardinality(parts) = 1 THEN
                RETURN 'it names type ' || spelled || ' without a schema, which is no built-in type of pg_catalog (a temporary type when the call was set, or an extension''s, which a role may drop and so free its name)';
            END IF;
            after_null := i > 4 AND c[i - 4] = 'N' AND c[i - 3] = 'U' AND c[i - 2] = 'L' AND c[i - 1] = 'L'
                          AND (i = 5 OR c[i - 5] !~ '^[A-Za-z0-9_$"]$');
            IF inside AND NOT after_null THEN
                RETURN 'it passes reg* values inside a row or a range of type ' || spelled || ', whose names are looked up at each run';
            END IF;
            IF leaf IS NOT NULL AND lit_end = i THEN
                IF (leaf LIKE 'regnamespace%' AND lit ~* temp) OR lit ~* temp_qualifier THEN
                    RETURN 'its constant ' || quote_literal(lit) || '::' || spelled || brackets || ' names a temporary schema';
                END IF;
                part := pgjobs.pgj_reg_reads_(lit, rtrim(leaf, '[]'), leaf LIKE '%[]' OR brackets <> '');
                IF part IS NOT NULL THEN
                    RETURN 'its constant ' || quote_literal(lit) || '::' || spelled || brackets || ' ' || part;
                END IF;
                reg_end := j;
            ELSIF leaf IS NOT NULL AND after_null THEN
                reg_end := j; -- (NULL::regclass)::regdomain
            ELSIF leaf IS NOT NULL THEN
                -- ('public.t'::regclass)::tabs, or (1259)::regclass: no name is read at each run
                k := i - 2;
                WHILE k > 0 AND c[k] ~ '^[0-9]$' LOOP
                    k := k - 1;
                END LOOP;
                IF NOT (i > 1 AND c[i - 1] = ')' AND (i - 1 = reg_end OR (k > 0 AND k < i - 2 AND c[k] = '('))) THEN
                    RETURN 'it makes ' || spelled || brackets || ' values from another value at each run, looked up by name in its owner''s search path';
                END IF;
            END IF;
            i := j;
        ELSE
            i := i + 1;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

-- Every job's call is read, each on its own: an error reading one (a call stored through the
-- internal functions, which PostgreSQL did not write back) stops that job, not the upgrade.
DO $$
DECLARE
    j record;
    lost text;
BEGIN
    CREATE TEMPORARY TABLE pgj_type_walk_ (name text PRIMARY KEY, typ oid, leaf text, inside boolean) ON COMMIT DROP;
    FOR j IN SELECT jobid, jobname, jobfunction FROM pgjobs.pgj_job_ WHERE jobfuncoid IS NOT NULL ORDER BY jobid LOOP
        BEGIN
            lost := pgjobs.pgj_call_lost_(j.jobfunction);
        EXCEPTION WHEN OTHERS THEN
            lost := 'its call could not be read (' || SQLERRM || '): it is not a call as PostgreSQL writes it back';
        END;
        CONTINUE WHEN lost IS NULL;
        UPDATE pgjobs.pgj_job_ SET jobfuncoid = NULL WHERE jobid = j.jobid;
        RAISE WARNING 'job % (call %) is stopped: %. It does not run until its owner sets the call again with pgj_update_job',
            j.jobname, j.jobfunction, lost;
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION pgjobs.pgj_type_reg_(oid), pgjobs.pgj_reg_reads_(text, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION pgjobs.pgj_call_lost_(text) FROM PUBLIC;
