-- pgjobs schema version 15: a job's call is bound, when it is set, to what it names, by OID. Until
-- now the stored call was text that PostgreSQL resolved again at each run, in the owner's session:
-- every name in it (the function's, its arguments' types and casts, the objects of reg* constants)
-- was looked up again, so that once such a name was free (a type renamed, or dropped with
-- DROP ... CASCADE of a type under it) another role that may create in its schema could make an
-- object of that name, whose code (a domain's CHECK, a cast, a trigger) then ran as the job's
-- owner (the attacker review of version 10). Versions 8 to 14 refuse or stop the forms found one
-- by one.
--
-- The call is now parsed once, when it is set, into a view the owner owns, in a schema of the
-- owner's own: pgjobs_call_<role OID>, made on the role's first job, owned by it, which no other
-- role may use (no USAGE: no other role can name, lock or replace what is in it). The view keeps
-- the call as PostgreSQL parsed it: the function, the types, casts and operators by OID, the
-- constants as values (a regclass constant is the table's OID, a date the date, whatever the
-- session's settings). The agent runs SELECT pgj_call_ FROM <view>, after a guard that checks the
-- view is still the owner's; nothing of the call is looked up by name at the run. An object the
-- call uses cannot be dropped without CASCADE, which drops the view: the job then stops, saying so,
-- until its owner sets the call again. The jobs set before this version keep their text and the
-- guard of versions 8 and 9 until their owner sets the call again (pgj_update_job).
SET LOCAL search_path = pg_catalog, pg_temp;

-- The view of a job's call, schema-qualified as pgjobs writes it (pgjobs_call_<role OID>.call_<32
-- hex digits>); NULL for a call set before version 15.
ALTER TABLE pgjobs.pgj_job_ ADD COLUMN jobview text;

-- pgj_call_schema_ returns the schema of the calling role's call views (the stamp says who calls),
-- pgjobs_call_<its OID>, making it, owned by the role, when there is none, with no privilege for
-- any other role (the role's default privileges on schemas are revoked). A schema of that name
-- that another role owns is refused: the views go only where no other role may create or look.
CREATE FUNCTION pgjobs.pgj_call_schema_(p_function text) RETURNS text
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgjobs.pgj_caller_take_(p_function);
    schema text := 'pgjobs_call_' || caller;
    owner oid;
    grantee oid;
BEGIN
    SELECT nspowner INTO owner FROM pg_namespace WHERE nspname = schema;
    IF NOT FOUND THEN
        BEGIN
            EXECUTE format('CREATE SCHEMA %I AUTHORIZATION %I', schema, pg_get_userbyid(caller));
            FOR grantee IN SELECT DISTINCT a.grantee FROM pg_namespace n, aclexplode(n.nspacl) a
                           WHERE n.nspname = schema AND a.grantee <> caller LOOP
                EXECUTE format('REVOKE ALL ON SCHEMA %I FROM %s', schema,
                               CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(grantee)) END);
            END LOOP;
            owner := caller;
        EXCEPTION WHEN duplicate_schema OR unique_violation THEN -- made meanwhile by the role's other session
            SELECT nspowner INTO owner FROM pg_namespace WHERE nspname = schema;
            IF NOT FOUND THEN -- after this transaction's snapshot (REPEATABLE READ)
                RAISE EXCEPTION '%: schema %, where the views of role %''s job calls go, was made by another session after this transaction began',
                    p_function, schema, pg_get_userbyid(caller)
                    USING ERRCODE = 'serialization_failure', HINT = 'run the transaction again';
            END IF;
        END;
    END IF;
    IF owner <> caller THEN
        RAISE EXCEPTION '%: schema %, where the views of role %''s job calls go, is owned by role %',
            p_function, schema, pg_get_userbyid(caller), pg_get_userbyid(owner)
            USING ERRCODE = 'insufficient_privilege',
            HINT = 'a superuser renames or drops that schema (no other role may own it)';
    END IF;
    RETURN schema;
END
$$;

-- pgj_call_view_check_ checks the call of view p_view (SELECT (<call>) IS NULL AS pgj_call_, made
-- by the caller from text p_checked) and returns it as PostgreSQL writes it back, schema-qualified,
-- with the function it calls: the checks of versions 9 to 13 (pgj_call_unstable_: what the call
-- names must last and read the same), a function, which the caller may execute. Constants are
-- written back as pg_dump writes them, the caller's settings put back after.
CREATE FUNCTION pgjobs.pgj_call_view_check_(p_function text, p_argno int, p_checked text, p_view oid,
    OUT call text, OUT funcoid oid)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
AS $$
DECLARE
    def text;
    fn record;
    unstable text;
    saved text[];
BEGIN
    SELECT substring(r.ev_action::text FROM ':targetList \(\{TARGETENTRY :expr \{NULLTEST :arg \{FUNCEXPR :funcid ([0-9]+) ')::oid
    INTO funcoid FROM pg_rewrite r WHERE r.ev_class = p_view;
    saved := ARRAY[current_setting('DateStyle'), current_setting('IntervalStyle'), current_setting('extra_float_digits')];
    PERFORM set_config('DateStyle', 'ISO, MDY', true), set_config('IntervalStyle', 'postgres', true),
            set_config('extra_float_digits', '3', true);
    def := pg_get_viewdef(p_view);
    PERFORM set_config('DateStyle', saved[1], true), set_config('IntervalStyle', saved[2], true),
            set_config('extra_float_digits', saved[3], true);
    unstable := pgjobs.pgj_call_unstable_(p_view);
    IF unstable IS NOT NULL THEN
        RAISE EXCEPTION '%: argument % (function call) % %', p_function, p_argno, quote_literal(left(p_checked, 200)), unstable
            USING ERRCODE = 'invalid_parameter_value',
            HINT = 'create the function and the types and objects its call names in a schema that lasts, and pass names in arrays or rows as text';
    END IF;
    IF funcoid IS NULL THEN
        RAISE EXCEPTION '%: argument % (function call) % is not a call of a function', p_function, p_argno, quote_literal(left(p_checked, 200))
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
        RAISE EXCEPTION '%: argument % (function call) %: cannot write it back schema-qualified (%)', p_function, p_argno, quote_literal(left(p_checked, 200)), def
            USING ERRCODE = 'internal_error';
    END IF;
END
$$;

-- pgj_call_bind_ parses a job's call as the caller would run it, with the caller's privileges and
-- search path (p_path), into a new view of the caller's call schema, without running anything
-- (parsing converts the constants to the function's parameter types: it runs those types' input
-- functions and domain checks as the caller), checks it (pgj_call_view_check_), and returns the
-- call written back, its function and the view. The call must pass pgj_call_syntax_: one
-- function call with constant arguments. The view goes with the caller's transaction if it fails.
CREATE FUNCTION pgjobs.pgj_call_bind_(p_function text, p_argno int, p_call text, p_path text,
    OUT call text, OUT funcoid oid, OUT view text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
AS $$
DECLARE
    checked text := pgjobs.pgj_call_syntax_(p_function, p_argno, p_call);
    schema text;
    checks record;
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    schema := pgjobs.pgj_call_schema_(p_function);
    view := quote_ident(schema) || '.' || quote_ident('call_' || replace(gen_random_uuid()::text, '-', ''));
    BEGIN
        PERFORM set_config('search_path', p_path, true);
        -- IS NULL: a view has no column of type void, the result of most job functions.
        EXECUTE 'CREATE VIEW ' || view || ' AS SELECT (' || checked || ') IS NULL AS pgj_call_';
        PERFORM set_config('search_path', 'pg_catalog, pg_temp', true);
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION '%: argument % (function call) % does not resolve: %', p_function, p_argno, quote_literal(left(checked, 200)), SQLERRM
            USING ERRCODE = SQLSTATE, HINT = 'create the function first, or fix its name, schema or arguments';
    END;
    SELECT c.call, c.funcoid INTO checks FROM pgjobs.pgj_call_view_check_(p_function, p_argno, checked, view::regclass) c;
    call := checks.call;
    funcoid := checks.funcoid;
END
$$;

-- pgj_job_bind_ records view p_view as the call of the caller's job named p_name (the stamp says
-- who calls; a superuser too binds only a job of its own). The view must be one of the caller's
-- call schema, owned by the caller, and call the job's function: a role that calls this function
-- directly binds only its own job to its own view. The view the job had stays until the agent
-- drops it (pgj_call_views_drop_): dropping it here would wait for the runs that use it, and make
-- them wait for the caller's transaction.
CREATE FUNCTION pgjobs.pgj_job_bind_(p_function text, p_name text, p_view text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgjobs.pgj_caller_take_(p_function);
    job pgjobs.pgj_job_;
    bound text;
BEGIN
    SELECT * INTO job FROM pgjobs.pgj_job_ WHERE jobname = p_name AND jobownerid = caller FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: argument 1: job "%" of role % does not exist', p_function, p_name, pg_get_userbyid(caller)
            USING ERRCODE = 'undefined_object';
    END IF;
    SELECT n.nspname || '.' || c.relname INTO bound
    FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid JOIN pg_rewrite r ON r.ev_class = c.oid
    WHERE n.nspname = 'pgjobs_call_' || caller AND n.nspowner = caller AND c.relowner = caller AND c.relkind = 'v'
      AND p_view ~ '^pgjobs_call_[0-9]+\.call_[0-9a-f]{32}$'
      AND n.nspname = split_part(p_view, '.', 1) AND c.relname = split_part(p_view, '.', 2)
      AND substring(r.ev_action::text FROM ':targetList \(\{TARGETENTRY :expr \{NULLTEST :arg \{FUNCEXPR :funcid ([0-9]+) ')::oid = job.jobfuncoid;
    IF bound IS NULL THEN
        RAISE EXCEPTION '%: % is not a view of role %''s call schema calling the job''s function', p_function, p_view, pg_get_userbyid(caller)
            USING ERRCODE = 'invalid_parameter_value', HINT = 'call the public pgj_* function, not the internal one';
    END IF;
    UPDATE pgjobs.pgj_job_ SET jobview = bound WHERE jobid = job.jobid;
END
$$;

-- pgj_call_views_drop_ drops those of views p_views (which the agent found no job used, a while
-- before: pgjobs_call_<OID>.call_<hex> views of their role's own schema) that no job uses now, at
-- most 200 (each drop holds its locks to the end of the transaction, and the server's lock table
-- is shared: thousands in one transaction ran out of it), then the call schemas left empty of
-- roles that have no job, and returns how many views it dropped. A view another session holds (a
-- run of a job's former call) is left for later: the drop waits at most 100 ms for it. Only the
-- agent may call it (a role that may update the leader lease, as the agents' roles must: checked
-- for the session's role).
CREATE FUNCTION pgjobs.pgj_call_views_drop_(p_views text[]) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
SET lock_timeout = '100ms'
AS $$
DECLARE
    v record;
    dropped int := 0;
BEGIN
    IF NOT has_table_privilege(session_user, 'pgjobs.pgj_leader_', 'UPDATE') THEN
        RAISE EXCEPTION 'pgj_call_views_drop_: only the agent drops the views of former calls'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF cardinality(p_views) > 200 THEN
        RAISE EXCEPTION 'pgj_call_views_drop_: % views given, at most 200 at a time', cardinality(p_views)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
    FOR v IN SELECT quote_ident(n.nspname) || '.' || quote_ident(c.relname) AS name
             FROM unnest(p_views) AS w(view)
             JOIN pg_namespace n ON n.nspname = split_part(w.view, '.', 1)
             JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = split_part(w.view, '.', 2)
             WHERE w.view ~ '^pgjobs_call_[0-9]+\.call_[0-9a-f]{32}$' AND c.relkind = 'v'
               AND n.nspowner::text = substr(n.nspname, 13) AND c.relowner = n.nspowner
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobview = w.view)
               -- nothing hangs on it but its own rule (a trigger would go with it, taking locks: a
               -- role's view with 20,000 of them made the drop run out of the lock table)
               AND NOT EXISTS (SELECT FROM pg_depend d
                               WHERE d.refclassid = 'pg_class'::regclass AND d.refobjid = c.oid
                                 AND NOT (d.classid = 'pg_rewrite'::regclass
                                          AND d.objid IN (SELECT r.oid FROM pg_rewrite r WHERE r.ev_class = c.oid))
                                 AND NOT (d.classid = 'pg_type'::regclass AND d.deptype = 'i')) LOOP
        BEGIN
            EXECUTE 'DROP VIEW ' || v.name;
            dropped := dropped + 1;
        EXCEPTION WHEN OTHERS THEN
            NULL; -- in use, renamed or dropped meanwhile, or its owner made something on it: tried again later
        END;
    END LOOP;
    -- the schema of a role whose jobs are all dropped, once empty: the role may then be dropped
    FOR v IN SELECT quote_ident(n.nspname) AS name FROM pg_namespace n
             WHERE n.nspname ~ '^pgjobs_call_[0-9]+$' AND n.nspowner::text = substr(n.nspname, 13)
               AND NOT EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobownerid = n.nspowner)
               AND NOT EXISTS (SELECT FROM pg_class c WHERE c.relnamespace = n.oid) LOOP
        BEGIN
            EXECUTE 'DROP SCHEMA ' || v.name;
        EXCEPTION WHEN OTHERS THEN
            NULL; -- something else of its owner's is in it, or it is in use
        END;
    END LOOP;
    RETURN dropped;
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_job_create_call_(p_function text, p_name text, p_call text, p_start text, p_recurrence text, p_startup boolean, p_path text) RETURNS int
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    bound record := pgjobs.pgj_call_bind_(p_function, 2, p_call, p_path);
    id int;
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    id := pgjobs.pgj_job_create_(p_function, p_name, bound.call, bound.funcoid, p_start, p_recurrence, p_startup);
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_job_bind_(p_function, p_name, bound.view);
    RETURN id;
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_job_update_call_(p_name text, p_new_name text, p_new_call text, p_new_start text, p_path text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    new_call text;
    new_funcoid oid;
    new_view text;
BEGIN
    IF p_new_call IS NOT NULL THEN
        -- Only the owner sets a job's call: resolving it converts its constants to the types of
        -- the owner's function, which runs those types' input functions and domain checks as the
        -- caller, and a superuser must not run another role's code that way.
        IF EXISTS (SELECT FROM pgjobs.pgj_jobs j WHERE j.name = p_name AND j.owner <> current_user) THEN
            RAISE EXCEPTION 'pgj_update_job: argument 3: only the job''s owner may set its call'
                USING ERRCODE = 'insufficient_privilege',
                      HINT = 'the owner sets it; a superuser may drop the job or change its name and start schedule';
        END IF;
        SELECT b.call, b.funcoid, b.view INTO new_call, new_funcoid, new_view
        FROM pgjobs.pgj_call_bind_('pgj_update_job', 3, p_new_call, p_path) b;
    END IF;
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_job_update_(p_name, p_new_name, new_call, new_funcoid, p_new_start);
    IF new_view IS NOT NULL THEN
        PERFORM pgjobs.pgj_stamp_();
        PERFORM pgjobs.pgj_job_bind_('pgj_update_job', coalesce(p_new_name, p_name), new_view);
    END IF;
END
$$;

-- pgj_run_view_check_ is the agent's guard before each run of a bound call (pgj_run_check_ stays
-- the guard of the calls set before version 15), sent on the run's session in the same round trip
-- as SELECT pgj_call_ FROM p_view, and run before it: the session must be of the job's owner, role
-- p_owner (named p_owner_name), which still exists, may log in and has not expired; and p_view
-- must be a view of the owner's own call schema, owned by the owner. Nobody but the owner (and a
-- superuser) may create in or look into that schema: what the run then reads by that name is the
-- view the owner's call was bound to, or one the owner made.
CREATE FUNCTION pgjobs.pgj_run_view_check_(p_owner oid, p_owner_name text, p_view text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
    v record;
BEGIN
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
    SELECT n.nspowner, c.relowner, c.relkind INTO v
    FROM pg_namespace n LEFT JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = split_part(p_view, '.', 2)
    WHERE n.nspname = 'pgjobs_call_' || p_owner AND split_part(p_view, '.', 1) = n.nspname;
    IF NOT FOUND OR v.relowner IS NULL THEN
        RAISE EXCEPTION 'the view % of the job''s call is gone (dropped with an object the call used, or by its owner): the job does not run', p_view
            USING ERRCODE = 'undefined_table', HINT = format('its owner %s sets the call again with pgj_update_job', r.rolname);
    ELSIF v.nspowner <> p_owner OR v.relowner <> p_owner OR v.relkind <> 'v' THEN
        RAISE EXCEPTION 'the view % of the job''s call, or its schema, is no longer a view of the job''s owner %: the job does not run', p_view, r.rolname
            USING ERRCODE = 'insufficient_privilege', HINT = format('its owner %s sets the call again with pgj_update_job', r.rolname);
    END IF;
END
$$;

-- pgj_jobs shows the view each job's call is bound to (what pg_stat_activity shows of a run): NULL
-- for a call set before version 15, which its owner binds by setting it again.
CREATE OR REPLACE VIEW pgjobs.pgj_jobs WITH (security_barrier) AS
SELECT j.jobname AS name,
       j.jobfunction AS function,
       j.jobisstartup AS startup,
       st.schname AS start_schedule,
       ARRAY(SELECT s.schname FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
             WHERE js.jsjobid = j.jobid ORDER BY s.schname) AS schedules,
       ARRAY(SELECT s.schtext FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
             WHERE js.jsjobid = j.jobid ORDER BY s.schname) AS definitions,
       CASE
           WHEN j.jobpaused THEN NULL
           WHEN (SELECT EXISTS (SELECT FROM pgjobs.pgj_leader_ l JOIN pg_catalog.pg_stat_activity a
                                ON a.pid = l.pid AND a.datname = pg_catalog.current_database())) THEN f.firenext
           WHEN f.firenext > pg_catalog.now() THEN f.firenext
           ELSE pgjobs.pgj_job_next_(st.schtext, j.jobstartset,
                ARRAY(SELECT s.schtext FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
                      WHERE js.jsjobid = j.jobid),
                greatest(pg_catalog.now(), f.firelast),
                coalesce((SELECT l.zone FROM pgjobs.pgj_leader_ l), pg_catalog.current_setting('TimeZone')),
                pg_catalog.now())
       END AS next_run,
       f.firelastrun AS last_run,
       f.firelaststatus AS last_status,
       coalesce(pg_catalog.pg_get_userbyid(j.jobownerid)::text, j.jobowner) AS owner,
       j.jobcreated AS created,
       j.jobpaused AS paused,
       j.jobtimeout AS timeout,
       j.jobview AS view
FROM pgjobs.pgj_job_ j
LEFT JOIN pgjobs.pgj_schedule_ st ON st.schid = j.jobstartschid
LEFT JOIN pgjobs.pgj_fire_ f ON f.firejobid = j.jobid
WHERE pgjobs.pgj_visible_(j.jobownerid, pgjobs.pgj_role_(current_user));
COMMENT ON COLUMN pgjobs.pgj_jobs.view IS 'the view the call is bound to (SELECT pgj_call_ FROM it runs the job); NULL: set before schema version 15, resolved by name at each run until its owner sets it again';

-- The calls are bound by pgj_call_bind_ now: version 2's resolution into a temporary view is no
-- longer called, and no role may call it. It is not dropped: a role's temporary view over it, in a
-- session left open, made the upgrade fail (the attacker review of version 15).
REVOKE ALL ON FUNCTION pgjobs.pgj_call_resolve_(text, int, text, text) FROM PUBLIC;

REVOKE ALL ON FUNCTION pgjobs.pgj_call_schema_(text), pgjobs.pgj_call_view_check_(text, int, text, oid),
    pgjobs.pgj_call_bind_(text, int, text, text), pgjobs.pgj_job_bind_(text, text, text),
    pgjobs.pgj_call_views_drop_(text[]), pgjobs.pgj_run_view_check_(oid, text, text) FROM PUBLIC;
-- called by the public functions as the caller (the definer ones take the caller's stamp), the
-- guard, on the owner's session, and the agent's drop of former calls' views (it checks its caller)
GRANT EXECUTE ON FUNCTION pgjobs.pgj_call_schema_(text), pgjobs.pgj_call_view_check_(text, int, text, oid),
    pgjobs.pgj_call_bind_(text, int, text, text), pgjobs.pgj_job_bind_(text, text, text),
    pgjobs.pgj_call_views_drop_(text[]), pgjobs.pgj_run_view_check_(oid, text, text) TO PUBLIC;
