-- pgjobs schema version 9: a job's call may not use an object of a temporary schema. A call is
-- stored as PostgreSQL writes it back, with every name that is not visible without it
-- schema-qualified; a temporary schema is visible, so a type of the caller's own temporary schema
-- ('x'::pg_temp.tdom) was stored by its bare name (tdom) and looked up at each run in the owner's
-- search path, where a role that may create in public could have put a domain of that name whose
-- CHECK then ran as the owner. A function or type of another session's temporary schema is stored
-- qualified (pg_temp_3.f), but any role that later gets that session's temporary schema may create
-- in it. So pgj_create_job and pgj_update_job refuse such a call, and the guard before each run
-- refuses a call of a function of a temporary schema.
--
-- A job stored by an earlier version with a temporary type in its call is not found here: finding
-- it means parsing the owner's call, which runs the input functions of the types it names, and the
-- upgrade runs as a superuser. Its runs have failed since the session that made the type ended.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_resolve_ resolves a job's function call as the caller would run it (see version 2):
-- as version 2's, and it refuses a call that uses any object of a temporary schema.
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
    temporary text;
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
    -- What the call refers to, as the view depends on it: the function, the types of its
    -- arguments and casts, the objects of regclass, regtype, ... constants. None may be in a
    -- temporary schema, the caller's or another session's.
    SELECT string_agg(DISTINCT o.type || ' ' || o.identity, ', ') INTO temporary
    FROM pg_depend d
    JOIN pg_rewrite w ON d.classid = 'pg_rewrite'::regclass AND d.objid = w.oid,
    LATERAL pg_identify_object(d.refclassid, d.refobjid, 0) o
    JOIN pg_namespace n ON n.nspname = o.schema
    WHERE w.ev_class = view_oid AND NOT (d.refclassid = 'pg_class'::regclass AND d.refobjid = view_oid)
      AND (n.oid = pg_my_temp_schema() OR pg_is_other_temp_schema(n.oid));
    DROP VIEW pg_temp.pgj_resolve_call_;
    IF temporary IS NOT NULL THEN
        RAISE EXCEPTION '%: argument % (function call) % uses % of a temporary schema: a job''s call may not, as the run would look its name up again in another session',
            p_function, p_argno, quote_literal(left(checked, 200)), temporary
            USING ERRCODE = 'invalid_parameter_value', HINT = 'create the function and the types its call uses in a schema that lasts';
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

-- pgj_run_check_, the agent's guard before each run (see version 8): as version 8's, and it
-- refuses a call of a function of a temporary schema (by its name: "pg_" begins only the names of
-- the system's schemas).
CREATE OR REPLACE FUNCTION pgjobs.pgj_run_check_(p_owner oid, p_owner_name text, p_funcoid oid, p_schema text, p_name text, p_castable boolean) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    other record;
    fn record;
    creator oid;
BEGIN
    IF p_funcoid IS NULL OR p_schema IS NULL OR p_name IS NULL OR p_castable IS NULL THEN
        RAISE EXCEPTION 'the job''s call has no function, schema or name to check: the job does not run'
            USING ERRCODE = 'null_value_not_allowed';
    END IF;
    IF p_schema ~ '^pg_(toast_)?temp(_[0-9]+)?$' THEN
        RAISE EXCEPTION 'the job''s function is of the temporary schema %, in which any session may create: the job does not run', p_schema
            USING ERRCODE = 'invalid_schema_name', HINT = 'create the function in a schema that lasts, and set the call again with pgj_update_job';
    END IF;
    SELECT rolname, rolcanlogin, rolvaliduntil INTO r FROM pg_roles WHERE oid = p_owner;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the job''s owner % (role OID %) was dropped: the job does not run', p_owner_name, p_owner
            USING ERRCODE = 'undefined_object', HINT = 'a superuser may drop the job: SELECT pgj_drop_job(name)';
    ELSIF NOT r.rolcanlogin THEN
        RAISE EXCEPTION 'the job''s owner % may no longer log in: the job does not run', r.rolname
            USING ERRCODE = 'insufficient_privilege', HINT = format('ALTER ROLE %I LOGIN lets it run again', r.rolname);
    ELSIF r.rolvaliduntil < now() THEN
        RAISE EXCEPTION 'the job''s owner % expired at %: the job does not run', r.rolname, r.rolvaliduntil
            USING ERRCODE = 'insufficient_privilege', HINT = format('ALTER ROLE %I VALID UNTIL ''infinity'' lets it run again', r.rolname);
    ELSIF session_user <> r.rolname OR current_user <> r.rolname THEN
        RAISE EXCEPTION 'this session runs as role %, not as the job''s owner %: the job does not run', current_user, r.rolname
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- The schema by its name through the catalog cache (to_regnamespace), not a scan of
    -- pg_namespace: the guard runs before every run. A type of the name counts as much as a
    -- function when the call has one positional argument (p_castable): PostgreSQL then reads
    -- name(x) as a cast to it when no function fits exactly; not a table's row type, which it never
    -- casts to that way.
    SELECT o.what, o.owner INTO other
    FROM (SELECT p.oid::regprocedure::text AS what, p.proowner AS owner, p.pronamespace AS nsp
          FROM pg_proc p
          WHERE p.pronamespace = to_regnamespace(quote_ident(p_schema)) AND p.proname = p_name
          UNION ALL
          SELECT 'type ' || t.oid::regtype::text, t.typowner, t.typnamespace
          FROM pg_type t
          WHERE p_castable AND t.typnamespace = to_regnamespace(quote_ident(p_schema)) AND t.typname = p_name
            AND t.typrelid = 0) o
    WHERE o.owner <> p_owner
      AND o.owner IS DISTINCT FROM (SELECT f.proowner FROM pg_proc f
                                    WHERE f.oid = p_funcoid AND f.pronamespace = o.nsp AND f.proname = p_name)
      AND NOT EXISTS (SELECT FROM pg_roles a WHERE a.oid = o.owner AND a.rolsuper)
    ORDER BY o.what
    LIMIT 1;
    IF FOUND THEN
        IF NOT EXISTS (SELECT FROM pg_proc f WHERE f.oid = p_funcoid AND f.proname = p_name
                       AND f.pronamespace = to_regnamespace(quote_ident(p_schema))) THEN
            RAISE EXCEPTION 'the function the job''s call was set to (OID %) is no longer %.%, and % of that name is owned by role %, neither the job''s owner % nor a superuser: the job does not run',
                p_funcoid, quote_ident(p_schema), quote_ident(p_name), other.what, pg_get_userbyid(other.owner), r.rolname
                USING ERRCODE = 'ambiguous_function',
                HINT = format('if %s is what the job should call, its owner %s sets the call again with pgj_update_job', other.what, r.rolname);
        END IF;
        RAISE EXCEPTION '% is owned by role %, neither the job''s owner %, nor the owner of the function the call was set to, nor a superuser: it could be called in place of that function, so the job does not run',
            other.what, pg_get_userbyid(other.owner), r.rolname
            USING ERRCODE = 'ambiguous_function',
            HINT = format('drop it, and keep other roles from creating in schema %s (REVOKE CREATE ON SCHEMA %1$s FROM PUBLIC)', quote_ident(p_schema));
    END IF;
    -- What a role creates between this guard and the call's parse is not seen above. It cannot
    -- take an exact call: PostgreSQL picks the function whose parameters are the arguments' types
    -- before any other reading, and no second function of those parameters can exist beside it.
    -- The stored call's arguments carry their types, so the call is exact when the function it was
    -- set to still has that schema and name and no parameter of a pseudo-type (anyelement, "any",
    -- record, ...). Otherwise the run goes on only when no role but the trusted ones may create in
    -- the schema: its owner (for pg_database_owner, the database's) and every role granted CREATE
    -- on it (PUBLIC, 0, never trusted).
    SELECT f.proowner, (SELECT string_agg(t.oid::regtype::text, ', ') FROM unnest(f.proargtypes) a JOIN pg_type t ON t.oid = a
                        WHERE t.typtype = 'p') AS pseudo
    INTO fn FROM pg_proc f
    WHERE f.oid = p_funcoid AND f.proname = p_name AND f.pronamespace = to_regnamespace(quote_ident(p_schema));
    IF NOT FOUND OR fn.pseudo IS NOT NULL THEN
        IF to_regnamespace(quote_ident(p_schema)) IS NULL THEN
            RAISE EXCEPTION 'the schema % of the job''s function no longer exists: the job does not run', quote_ident(p_schema)
                USING ERRCODE = 'invalid_schema_name';
        END IF;
        SELECT c.role INTO creator
        FROM (SELECT CASE WHEN c0.role = 'pg_database_owner'::regrole
                          THEN (SELECT d.datdba FROM pg_database d WHERE d.datname = current_database())
                          ELSE c0.role END AS role
              FROM pg_namespace n,
                   LATERAL (SELECT n.nspowner AS role
                            UNION ALL
                            SELECT x.grantee FROM aclexplode(n.nspacl) x WHERE x.privilege_type = 'CREATE') c0
              WHERE n.oid = to_regnamespace(quote_ident(p_schema))) c
        WHERE c.role <> p_owner AND c.role IS DISTINCT FROM fn.proowner
          AND NOT EXISTS (SELECT FROM pg_roles a WHERE a.oid = c.role AND a.rolsuper)
        ORDER BY c.role
        LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION '% and % may create in schema %: a function or type it created as the job runs could be called in place of the job''s, so the job does not run',
                CASE WHEN fn.pseudo IS NULL
                     THEN format('the function the job''s call was set to (OID %s) is no longer %s.%s', p_funcoid, quote_ident(p_schema), quote_ident(p_name))
                     ELSE format('the job''s function %s takes an argument of a pseudo-type (%s), which a function of concrete types fits better,', p_funcoid::regprocedure, fn.pseudo) END,
                CASE WHEN creator = 0 THEN 'every role (PUBLIC)' ELSE 'role ' || quote_ident(pg_get_userbyid(creator)) END, quote_ident(p_schema)
                USING ERRCODE = 'ambiguous_function',
                HINT = CASE WHEN fn.pseudo IS NULL
                            THEN format('its owner %s sets the call again with pgj_update_job, or keeps other roles from creating in schema %s', r.rolname, quote_ident(p_schema))
                            ELSE format('give the function parameters of concrete types, or keep other roles from creating in schema %s (REVOKE CREATE ON SCHEMA %1$s FROM %s)',
                                        quote_ident(p_schema), CASE WHEN creator = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(creator)) END) END;
        END IF;
    END IF;
    PERFORM set_config('standard_conforming_strings', 'on', true);
END
$$;

-- Version 7's guard, which an agent of that version still calls until it stops (see version 8),
-- now without the version in its message.
CREATE OR REPLACE FUNCTION pgjobs.pgj_run_check_(p_owner oid, p_owner_name text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'the pgjobs schema is newer than this agent''s: the job does not run'
        USING ERRCODE = 'feature_not_supported', HINT = 'restart the agent with the pgjobs that upgraded the schema';
END
$$;
