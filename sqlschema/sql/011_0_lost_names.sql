-- pgjobs schema version 11: the jobs stored before version 9 whose call names an object of the
-- owner's temporary schema stop running until their owner sets the call again. Such a call was
-- stored with the object's bare name ('x'::pg_temp.tdom as ('x'::text)::tdom), which the run
-- looks up in the owner's search path: once the session that made the object ended, a role that may
-- create in a schema of that path could make an object of that name (a domain whose CHECK runs its
-- code) and the job ran it as its owner. Versions 9 and 10 refuse such calls when they are set.
--
-- The upgrade finds them without parsing the calls (parsing runs the input functions of the types a
-- call names, and the upgrade runs as a superuser): a stored call names with their schema every
-- object outside pg_catalog and the temporary schema, so a bare name that pg_catalog does not have
-- was of the temporary schema. pgj_call_lost_ reads the call's casts and the constants of reg*
-- types, and looks those names up in pg_catalog alone. The job keeps its call, and its function's
-- OID is cleared: the agent records each of its fires as failed, saying to set the call again. A
-- reg* value inside a row or a range is not looked at (version 10 refuses such calls when set).
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_lost_ returns the first name in stored call p_call that does not name an object of
-- pg_catalog though written without a schema, as "type tdom" or "regclass 'stage'", or NULL when
-- there is none: the type of each cast, and the names in each constant of a reg* type or of an
-- array of one (a string written right before the cast), read by the type's own input function,
-- which only looks names up. It reads the call as PostgreSQL writes a call back (strings in single
-- quotes with '' for a quote, identifiers quoted with double quotes where they must be).
CREATE FUNCTION pgjobs.pgj_call_lost_(p_call text) RETURNS text
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
    name text;
    brackets text;
    keywords text[] := ARRAY['bigint', 'bit', 'boolean', 'character', 'double', 'integer', 'interval', 'numeric',
                             'real', 'smallint', 'time', 'timestamp']; -- format_type's SQL spellings
    reg text[] := ARRAY['regclass', 'regcollation', 'regconfig', 'regdictionary', 'regnamespace', 'regoper',
                        'regoperator', 'regproc', 'regprocedure', 'regtype'];
BEGIN
    WHILE i <= n LOOP
        IF substr(p_call, i, 1) = '''' THEN
            lit := '';
            j := i + 1;
            LOOP
                k := strpos(substr(p_call, j), '''');
                IF k = 0 THEN
                    RETURN 'an unterminated string';
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
                RETURN 'an unterminated quoted name';
            END IF;
            i := i + length(name);
        ELSIF substr(p_call, i, 2) = '::' THEN
            name := substring(substr(p_call, i + 2) FROM '^("(?:[^"]|"")*"|[A-Za-z_][A-Za-z0-9_$]*)');
            IF name IS NULL THEN
                RETURN 'a cast without a type name';
            END IF;
            k := i + 2 + length(name);
            IF substr(p_call, k, 1) = '.' THEN
                i := k + 1; -- schema-qualified: the name after the dot is read as a name
                CONTINUE;
            END IF;
            IF NOT name = ANY (keywords) AND to_regtype(name) IS NULL THEN
                RETURN 'type ' || name;
            END IF;
            IF name = ANY (reg) AND lit_end = i THEN
                brackets := coalesce(substring(substr(p_call, k) FROM '^((?:\[\])+)'), '');
                IF name = 'regnamespace' AND lit ~ '^\{?"?pg_(toast_)?temp' THEN
                    RETURN name || brackets || ' ' || quote_literal(lit);
                END IF;
                BEGIN
                    EXECUTE format('SELECT %L::pg_catalog.%s%s', lit, name, brackets);
                EXCEPTION WHEN OTHERS THEN
                    RETURN name || brackets || ' ' || quote_literal(lit);
                END;
            END IF;
            i := k;
        ELSE
            i := i + 1;
        END IF;
    END LOOP;
    RETURN NULL;
END
$$;

-- The scan itself runs in version 14, over every job, with pgj_call_lost_ as version 14 makes it
-- (it ran here until the code review of version 14: a call any role could store through the
-- internal functions made this scan, and so the whole upgrade, fail, and a long call took
-- seconds). Version 14 reads more forms; an upgrade through this version goes on to version 14 in
-- the same transaction, and a database already past this version had this scan, and has 14's.

REVOKE ALL ON FUNCTION pgjobs.pgj_call_lost_(text) FROM PUBLIC;
