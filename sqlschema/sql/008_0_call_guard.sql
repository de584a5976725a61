-- pgjobs schema version 8: the guard before each run also checks what else the call's name could
-- mean. A stored call names its function (schema.name(arguments)), and PostgreSQL resolves that
-- name again at each run: a role that may create in the function's schema (many databases still
-- let every role create in public) could add an overload that fits better, such as f(integer)
-- beside f(anyelement), and the job's owner would run it; or one that makes the call ambiguous; or
-- a type of that name, which PostgreSQL takes for a cast of a call's single positional argument
-- when no function fits exactly (a domain's CHECK then runs as the owner). So the run goes on only
-- when every function of that schema and name, and every type of it for a call of one positional
-- argument (but a table's row type), is owned by the job's owner, by the owner of the function the
-- call was set to (whom the owner trusted then: that role may change its function's body anyway),
-- or by a superuser. A function dropped and created again, or renamed, is no longer the one the
-- call was set to: what has that name must then be the owner's or a superuser's, or the owner sets
-- the call again.
--
-- The guard is a statement of its own, before the call's: what is created between the two is not
-- seen by its look at the functions and types of the name. An exact call (a function the call was
-- set to, of parameters of concrete types) cannot be taken that way; any other runs only when no
-- role but the trusted ones may create in the schema (see docs/security.md).
SET LOCAL search_path = pg_catalog, pg_temp;

-- The guard of version 7, which an agent of that version still calls until it stops: its runs
-- fail saying why, and nothing of them runs.
CREATE OR REPLACE FUNCTION pgjobs.pgj_run_check_(p_owner oid, p_owner_name text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'the pgjobs schema is version 8, newer than this agent''s: the job does not run'
        USING ERRCODE = 'feature_not_supported', HINT = 'restart the agent with the pgjobs that upgraded the schema';
END
$$;

-- pgj_run_check_ is the agent's guard before each run, sent on the run's session in the same
-- round trip as the call and run before it: the session must be of the job's owner (role p_owner,
-- by OID: not a new role of the same name), which still exists, may log in and has not expired;
-- and every function named p_name in schema p_schema (the name the stored call gives), and every
-- type of that name but a table's row type when the call has one positional argument
-- (p_castable), must be owned by that role, by the owner of function p_funcoid (the one the call
-- was set to) while it keeps that schema and name, or by a superuser. It also sets
-- standard_conforming_strings on for the run's transaction, before the call is parsed, whatever
-- an earlier run left in the session.
CREATE FUNCTION pgjobs.pgj_run_check_(p_owner oid, p_owner_name text, p_funcoid oid, p_schema text, p_name text, p_castable boolean) RETURNS void
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

REVOKE ALL ON FUNCTION pgjobs.pgj_run_check_(oid, text, oid, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgjobs.pgj_run_check_(oid, text, oid, text, text, boolean) TO PUBLIC;
