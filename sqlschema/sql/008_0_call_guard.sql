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
-- seen by it (see docs/security.md). It closes what sits there beforehand, not a race.
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
    PERFORM set_config('standard_conforming_strings', 'on', true);
END
$$;

REVOKE ALL ON FUNCTION pgjobs.pgj_run_check_(oid, text, oid, text, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgjobs.pgj_run_check_(oid, text, oid, text, text, boolean) TO PUBLIC;
