-- pgjobs schema version 2, part 2: the pgj_* API again, with the owner taken from current_user
-- (see 002_0_owner.sql) and job calls resolved when they are set.
--
-- Each public function is SECURITY INVOKER: it checks what must be checked with the caller's
-- privileges and search_path (the function call), then stamps the caller and calls a SECURITY
-- DEFINER function (name ending in _) that takes the stamp and writes. The definer functions trust
-- no argument that says who calls, and check again everything they write. A role sees and changes
-- only its own schedules and jobs (superusers see all); another role's object reads as one that
-- does not exist. Names are unique in the database: "already taken" is all that tells of another
-- role's objects.

DROP FUNCTION pgjobs.pgj_schedule_find_(text, int, text);
DROP FUNCTION pgjobs.pgj_job_find_(text, int, text);
DROP FUNCTION pgjobs.pgj_schedule_for_job_(text, int, text, name);
DROP FUNCTION pgjobs.pgj_call_resolves_(text, int, text);
DROP FUNCTION pgjobs.pgj_create_job_(text, text, text, text, text, boolean);
DROP FUNCTION pgjobs.pgj_update_job_(text, text, text, text);

-- pgj_schedule_find_ returns the schedule named p_name that role p_caller may change, locked, or
-- raises as if there were none.
CREATE FUNCTION pgjobs.pgj_schedule_find_(p_function text, p_argno int, p_name text, p_caller oid) RETURNS pgjobs.pgj_schedule_
LANGUAGE plpgsql
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    target pgj_schedule_;
BEGIN
    PERFORM pgj_require_(p_function, p_argno, 'schedule name', p_name);
    SELECT * INTO target FROM pgj_schedule_ WHERE schname = p_name AND pgj_visible_(schownerid, p_caller) FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: argument %: schedule "%" does not exist', p_function, p_argno, p_name
            USING ERRCODE = 'undefined_object', HINT = 'SELECT name FROM pgj_schedules lists your schedules';
    END IF;
    RETURN target;
END
$$;

-- pgj_job_find_ returns the job named p_name that role p_caller may change, locked, or raises as
-- if there were none.
CREATE FUNCTION pgjobs.pgj_job_find_(p_function text, p_argno int, p_name text, p_caller oid) RETURNS pgjobs.pgj_job_
LANGUAGE plpgsql
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    target pgj_job_;
BEGIN
    PERFORM pgj_require_(p_function, p_argno, 'job name', p_name);
    SELECT * INTO target FROM pgj_job_ WHERE jobname = p_name AND pgj_visible_(jobownerid, p_caller) FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: argument %: job "%" does not exist', p_function, p_argno, p_name
            USING ERRCODE = 'undefined_object', HINT = 'SELECT name FROM pgj_jobs lists your jobs';
    END IF;
    RETURN target;
END
$$;

-- pgj_schedule_for_job_ returns the schedule named p_name for a job of role p_owner: one that
-- p_caller may see, of the job's own owner.
CREATE FUNCTION pgjobs.pgj_schedule_for_job_(p_function text, p_argno int, p_name text, p_caller oid, p_owner oid) RETURNS pgjobs.pgj_schedule_
LANGUAGE plpgsql
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    target pgj_schedule_ := pgj_schedule_find_(p_function, p_argno, p_name, p_caller);
BEGIN
    IF target.schownerid <> p_owner THEN
        RAISE EXCEPTION '%: argument %: schedule "%" belongs to role %, the job to role %', p_function, p_argno, p_name,
            coalesce(pg_get_userbyid(target.schownerid)::text, target.schowner), coalesce(pg_get_userbyid(p_owner)::text, '?')
            USING ERRCODE = 'insufficient_privilege', HINT = 'a job uses only schedules of its own owner';
    END IF;
    RETURN target;
END
$$;

-- pgj_call_resolve_ resolves a job's function call as the caller would run it: with the caller's
-- privileges and search path (p_path, the caller's setting), without running anything. It creates
-- the temporary view pg_temp.pgj_resolve_call_ over SELECT (<call>) IS NULL (parsing and name resolution
-- only, nothing is planned or run), reads the function the call resolved to, and returns the call
-- as PostgreSQL writes it back with every name schema-qualified, so that the job runs the function
-- its owner meant whatever search path it runs with. The call must have passed pgj_call_syntax_:
-- one function call with constant arguments.
CREATE FUNCTION pgjobs.pgj_call_resolve_(p_function text, p_argno int, p_call text, p_path text,
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
    DROP VIEW pg_temp.pgj_resolve_call_;
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

-- pgj_call_check_ checks again, in a definer function, a call that pgj_call_resolve_ wrote back:
-- one call with constant arguments, of function p_funcoid, schema-qualified, which role p_owner
-- may execute. It does not resolve the call again: a role that calls the definer function directly
-- with a call of its own making gets only its own function call, run with its own privileges.
CREATE FUNCTION pgjobs.pgj_call_check_(p_function text, p_argno int, p_call text, p_funcoid oid, p_owner oid) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
SET standard_conforming_strings = on
AS $$
DECLARE
    call text := pgjobs.pgj_call_syntax_(p_function, p_argno, p_call, true);
    qualified text;
BEGIN
    SELECT quote_ident(n.nspname) || '.' || quote_ident(p.proname) || '(' INTO qualified
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = p_funcoid;
    IF qualified IS NULL OR NOT starts_with(call, qualified) THEN
        RAISE EXCEPTION '%: argument % (function call) is not the schema-qualified call of function %', p_function, p_argno, p_funcoid
            USING ERRCODE = 'invalid_parameter_value', HINT = 'call the public pgj_* function, not the internal one';
    END IF;
    IF NOT has_function_privilege(p_owner, p_funcoid, 'EXECUTE') THEN
        RAISE EXCEPTION '%: argument %: permission denied for function %', p_function, p_argno, p_funcoid::regprocedure
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN call;
END
$$;

-- Schedules.

CREATE FUNCTION pgjobs.pgj_schedule_create_(p_name text, p_schedule text) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_create_schedule');
    s  record;
    id int;
BEGIN
    PERFORM pgj_require_('pgj_create_schedule', 1, 'schedule name', p_name);
    s := pgj_parse_schedule_(p_schedule, 'argument 2 of pgj_create_schedule');
    INSERT INTO pgj_schedule_ (schname, schtype, schyear, schmonth, schday, schhour, schminute, schtext, schowner, schownerid)
    VALUES (p_name, s.schtype, s.schyear, s.schmonth, s.schday, s.schhour, s.schminute, s.schcanonical, pg_get_userbyid(caller), caller)
    RETURNING schid INTO id;
    RETURN id;
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'pgj_create_schedule: argument 1: schedule name "%" is already taken', p_name
        USING ERRCODE = 'duplicate_object', HINT = 'schedule names are unique in the database; choose another';
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_create_schedule(p_name text, p_schedule text) RETURNS int
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    RETURN pgjobs.pgj_schedule_create_(p_name, p_schedule);
END
$$;

CREATE FUNCTION pgjobs.pgj_schedule_update_(p_name text, p_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_update_schedule');
    target pgj_schedule_ := pgj_schedule_find_('pgj_update_schedule', 1, p_name, caller);
    s record := pgj_parse_schedule_(p_schedule, 'argument 2 of pgj_update_schedule');
BEGIN
    UPDATE pgj_schedule_
    SET schtype = s.schtype, schyear = s.schyear, schmonth = s.schmonth, schday = s.schday,
        schhour = s.schhour, schminute = s.schminute, schtext = s.schcanonical
    WHERE schid = target.schid;
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_update_schedule(p_name text, p_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_schedule_update_(p_name, p_schedule);
END
$$;

CREATE FUNCTION pgjobs.pgj_schedule_drop_(p_name text, p_force boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_drop_schedule');
    target pgj_schedule_ := pgj_schedule_find_('pgj_drop_schedule', 1, p_name, caller);
    users text;
BEGIN
    IF p_force IS NULL THEN
        RAISE EXCEPTION 'pgj_drop_schedule: argument 2 (force) must not be NULL'
            USING ERRCODE = 'null_value_not_allowed', HINT = 'false fails while jobs use the schedule, true detaches it from them';
    END IF;
    SELECT string_agg(jobname, ', ' ORDER BY jobname) INTO users
    FROM pgj_job_ j
    WHERE j.jobstartschid = target.schid
       OR EXISTS (SELECT FROM pgj_job_schedule_ js WHERE js.jsjobid = j.jobid AND js.jschid = target.schid);
    IF users IS NOT NULL AND NOT p_force THEN
        RAISE EXCEPTION 'pgj_drop_schedule: schedule "%" is used by jobs %', p_name, users
            USING ERRCODE = 'dependent_objects_still_exist',
                  HINT = 'pass true as argument 2 to detach it from these jobs and drop it';
    END IF;
    DELETE FROM pgj_job_schedule_ WHERE jschid = target.schid;
    UPDATE pgj_job_ SET jobstartschid = NULL, jobstartset = now() WHERE jobstartschid = target.schid;
    DELETE FROM pgj_schedule_ WHERE schid = target.schid;
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_drop_schedule(p_name text, p_force boolean) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_schedule_drop_(p_name, p_force);
END
$$;

CREATE FUNCTION pgjobs.pgj_schedule_drop_unused_() RETURNS int
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_drop_unused_schedules');
    dropped int;
BEGIN
    DELETE FROM pgj_schedule_ s
    WHERE s.schownerid = caller -- the caller's own, also for a superuser
      AND NOT EXISTS (SELECT FROM pgj_job_schedule_ js WHERE js.jschid = s.schid)
      AND NOT EXISTS (SELECT FROM pgj_job_ j WHERE j.jobstartschid = s.schid);
    GET DIAGNOSTICS dropped = ROW_COUNT;
    RETURN dropped;
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_drop_unused_schedules() RETURNS int
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    RETURN pgjobs.pgj_schedule_drop_unused_();
END
$$;

-- Jobs.

CREATE FUNCTION pgjobs.pgj_job_create_(p_function text, p_name text, p_call text, p_funcoid oid, p_start text, p_recurrence text, p_startup boolean) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_(p_function);
    call  text;
    start_id int;
    recurrence_id int;
    id int;
BEGIN
    PERFORM pgj_require_(p_function, 1, 'job name', p_name);
    call := pgj_call_check_(p_function, 2, p_call, p_funcoid, caller);
    IF nullif(p_start, '') IS NOT NULL THEN
        start_id := (pgj_schedule_for_job_(p_function, 3, p_start, caller, caller)).schid;
    END IF;
    IF nullif(p_recurrence, '') IS NOT NULL THEN
        recurrence_id := (pgj_schedule_for_job_(p_function, 4, p_recurrence, caller, caller)).schid;
    END IF;
    BEGIN
        INSERT INTO pgj_job_ (jobname, jobfunction, jobfuncoid, jobisstartup, jobstartschid, jobowner, jobownerid)
        VALUES (p_name, call, p_funcoid, p_startup, start_id, pg_get_userbyid(caller), caller)
        RETURNING jobid INTO id;
    EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION '%: argument 1: job name "%" is already taken', p_function, p_name
            USING ERRCODE = 'duplicate_object', HINT = 'job names are unique in the database; choose another';
    END;
    IF recurrence_id IS NOT NULL THEN
        INSERT INTO pgj_job_schedule_ (jsjobid, jschid) VALUES (id, recurrence_id);
    END IF;
    RETURN id;
END
$$;

-- pgj_job_create_call_ resolves the call as the caller, stamps the caller and creates the job.
CREATE FUNCTION pgjobs.pgj_job_create_call_(p_function text, p_name text, p_call text, p_start text, p_recurrence text, p_startup boolean, p_path text) RETURNS int
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    resolved record := pgjobs.pgj_call_resolve_(p_function, 2, p_call, p_path);
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    RETURN pgjobs.pgj_job_create_(p_function, p_name, resolved.call, resolved.funcoid, p_start, p_recurrence, p_startup);
END
$$;

-- The public functions that take a call have no SET search_path: they pass the caller's setting.
CREATE OR REPLACE FUNCTION pgjobs.pgj_create_job(p_name text, p_function text, p_start_schedule text, p_schedule text) RETURNS int
LANGUAGE plpgsql SECURITY INVOKER
AS $$
BEGIN
    RETURN pgjobs.pgj_job_create_call_('pgj_create_job', p_name, p_function, p_start_schedule, p_schedule, false,
                                       pg_catalog.current_setting('search_path'));
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_create_startup_job(p_name text, p_function text) RETURNS int
LANGUAGE plpgsql SECURITY INVOKER
AS $$
BEGIN
    RETURN pgjobs.pgj_job_create_call_('pgj_create_startup_job', p_name, p_function, NULL, NULL, true,
                                       pg_catalog.current_setting('search_path'));
END
$$;

CREATE FUNCTION pgjobs.pgj_job_update_(p_name text, p_new_name text, p_new_call text, p_new_funcoid oid, p_new_start text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_update_job');
    target pgj_job_ := pgj_job_find_('pgj_update_job', 1, p_name, caller);
BEGIN
    IF p_new_name IS NOT NULL THEN
        PERFORM pgj_require_('pgj_update_job', 2, 'new job name', p_new_name);
        BEGIN
            UPDATE pgj_job_ SET jobname = p_new_name WHERE jobid = target.jobid;
        EXCEPTION WHEN unique_violation THEN
            RAISE EXCEPTION 'pgj_update_job: argument 2: job name "%" is already taken', p_new_name
                USING ERRCODE = 'duplicate_object', HINT = 'job names are unique in the database; choose another';
        END;
    END IF;
    IF p_new_call IS NOT NULL THEN
        -- The job keeps its owner: a superuser changing alice's job gives it a call alice may run.
        UPDATE pgj_job_ SET jobfunction = pgj_call_check_('pgj_update_job', 3, p_new_call, p_new_funcoid, target.jobownerid),
                            jobfuncoid = p_new_funcoid
        WHERE jobid = target.jobid;
    END IF;
    IF p_new_start = '' THEN
        UPDATE pgj_job_ SET jobstartschid = NULL, jobstartset = now() WHERE jobid = target.jobid;
    ELSIF p_new_start IS NOT NULL THEN
        UPDATE pgj_job_ SET jobstartschid = (pgj_schedule_for_job_('pgj_update_job', 4, p_new_start, caller, target.jobownerid)).schid,
                            jobstartset = now()
        WHERE jobid = target.jobid;
    END IF;
END
$$;

CREATE FUNCTION pgjobs.pgj_job_update_call_(p_name text, p_new_name text, p_new_call text, p_new_start text, p_path text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    new_call text;
    new_funcoid oid;
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
        SELECT r.call, r.funcoid INTO new_call, new_funcoid FROM pgjobs.pgj_call_resolve_('pgj_update_job', 3, p_new_call, p_path) r;
    END IF;
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_job_update_(p_name, p_new_name, new_call, new_funcoid, p_new_start);
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_update_job(p_name text, p_new_name text, p_new_function text, p_new_start_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
AS $$
BEGIN
    PERFORM pgjobs.pgj_job_update_call_(p_name, p_new_name, p_new_function, p_new_start_schedule,
                                        pg_catalog.current_setting('search_path'));
END
$$;

CREATE FUNCTION pgjobs.pgj_job_schedule_add_(p_job text, p_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_add_job_schedule');
    job pgj_job_ := pgj_job_find_('pgj_add_job_schedule', 1, p_job, caller);
    sch pgj_schedule_ := pgj_schedule_for_job_('pgj_add_job_schedule', 2, p_schedule, caller, job.jobownerid);
BEGIN
    INSERT INTO pgj_job_schedule_ (jsjobid, jschid) VALUES (job.jobid, sch.schid);
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'pgj_add_job_schedule: job "%" already recurs on schedule "%"', p_job, p_schedule
        USING ERRCODE = 'duplicate_object';
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_add_job_schedule(p_job text, p_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_job_schedule_add_(p_job, p_schedule);
END
$$;

CREATE FUNCTION pgjobs.pgj_job_schedule_drop_(p_job text, p_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_drop_job_schedule');
    job pgj_job_ := pgj_job_find_('pgj_drop_job_schedule', 1, p_job, caller);
    sch pgj_schedule_ := pgj_schedule_find_('pgj_drop_job_schedule', 2, p_schedule, caller);
BEGIN
    DELETE FROM pgj_job_schedule_ WHERE jsjobid = job.jobid AND jschid = sch.schid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pgj_drop_job_schedule: job "%" does not recur on schedule "%"', p_job, p_schedule
            USING ERRCODE = 'undefined_object';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_drop_job_schedule(p_job text, p_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_job_schedule_drop_(p_job, p_schedule);
END
$$;

CREATE FUNCTION pgjobs.pgj_job_drop_(p_name text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_drop_job');
    job pgj_job_ := pgj_job_find_('pgj_drop_job', 1, p_name, caller);
BEGIN
    DELETE FROM pgj_job_ WHERE jobid = job.jobid;
END
$$;

CREATE OR REPLACE FUNCTION pgjobs.pgj_drop_job(p_name text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_job_drop_(p_name);
END
$$;

-- pgj_run_check_ is the agent's guard before each run, sent on the run's session in the same
-- round trip as the call and run before it: the session must be of the job's owner (role p_owner,
-- by OID: not a new role of the same name), which still exists, may log in and has not expired.
-- It also sets standard_conforming_strings on for the run's transaction, before the call is parsed,
-- whatever an earlier run left in the session.
CREATE FUNCTION pgjobs.pgj_run_check_(p_owner oid, p_owner_name text) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    r record;
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
    PERFORM set_config('standard_conforming_strings', 'on', true);
END
$$;

-- Views: each shows the rows of current_user, the role whose privileges the querying code has, or
-- all to a superuser. security_barrier: no function of a caller's query sees rows before that filter.

CREATE VIEW pgjobs.pgj_schedules WITH (security_barrier) AS
SELECT s.schname AS name,
       s.schtext AS schedule,
       s.schtype AS type,
       ARRAY(SELECT j.jobname FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_job_ j ON j.jobid = js.jsjobid
             WHERE js.jschid = s.schid ORDER BY j.jobname) AS jobs,
       ARRAY(SELECT j.jobname FROM pgjobs.pgj_job_ j WHERE j.jobstartschid = s.schid ORDER BY j.jobname) AS start_of_jobs,
       coalesce(pg_catalog.pg_get_userbyid(s.schownerid)::text, s.schowner) AS owner,
       s.schcreated AS created
FROM pgjobs.pgj_schedule_ s
WHERE pgjobs.pgj_visible_(s.schownerid, pgjobs.pgj_role_(current_user));
COMMENT ON VIEW pgjobs.pgj_schedules IS 'Your schedules, the jobs that recur on each and the jobs that wait for it to start';

CREATE VIEW pgjobs.pgj_jobs WITH (security_barrier) AS
SELECT j.jobname AS name,
       j.jobfunction AS function,
       j.jobisstartup AS startup,
       st.schname AS start_schedule,
       ARRAY(SELECT s.schname FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
             WHERE js.jsjobid = j.jobid ORDER BY s.schname) AS schedules,
       ARRAY(SELECT s.schtext FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
             WHERE js.jsjobid = j.jobid ORDER BY s.schname) AS definitions,
       f.firenext AS next_run,
       f.firelastrun AS last_run,
       f.firelaststatus AS last_status,
       coalesce(pg_catalog.pg_get_userbyid(j.jobownerid)::text, j.jobowner) AS owner,
       j.jobcreated AS created
FROM pgjobs.pgj_job_ j
LEFT JOIN pgjobs.pgj_schedule_ st ON st.schid = j.jobstartschid
LEFT JOIN pgjobs.pgj_fire_ f ON f.firejobid = j.jobid
WHERE pgjobs.pgj_visible_(j.jobownerid, pgjobs.pgj_role_(current_user));
COMMENT ON VIEW pgjobs.pgj_jobs IS 'Your jobs, their function calls (schema-qualified as resolved when set), start schedule, recurrence schedules (names and definitions in the same order), next and last run';

CREATE VIEW pgjobs.pgj_runs WITH (security_barrier) AS
SELECT r.runjobname AS job, r.runscheduled AS scheduled, r.runstarted AS started, r.runfinished AS finished,
       r.runstatus AS status, r.runsqlstate AS sqlstate, r.runmessage AS message,
       coalesce(pg_catalog.pg_get_userbyid(r.runownerid)::text, r.runowner) AS owner, r.runagent AS agent
FROM pgjobs.pgj_run_ r
WHERE pgjobs.pgj_visible_(r.runownerid, pgjobs.pgj_role_(current_user));
COMMENT ON VIEW pgjobs.pgj_runs IS 'The run history of your jobs';

GRANT SELECT ON pgjobs.pgj_schedules, pgjobs.pgj_jobs, pgjobs.pgj_runs TO PUBLIC;

-- Only what the public functions and views need is executable by PUBLIC; the definer functions
-- among them trust no argument that says who calls (they take the stamp).
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA pgjobs FROM PUBLIC;
GRANT EXECUTE ON FUNCTION
    pgjobs.pgj_create_schedule(text, text), pgjobs.pgj_update_schedule(text, text),
    pgjobs.pgj_drop_schedule(text, boolean), pgjobs.pgj_drop_unused_schedules(),
    pgjobs.pgj_create_job(text, text, text, text), pgjobs.pgj_create_startup_job(text, text),
    pgjobs.pgj_update_job(text, text, text, text), pgjobs.pgj_add_job_schedule(text, text),
    pgjobs.pgj_drop_job_schedule(text, text), pgjobs.pgj_drop_job(text),
    -- called by the public functions, as the caller
    pgjobs.pgj_stamp_(), pgjobs.pgj_caller_clear_(), pgjobs.pgj_job_create_call_(text, text, text, text, text, boolean, text),
    pgjobs.pgj_job_update_call_(text, text, text, text, text),
    pgjobs.pgj_call_resolve_(text, int, text, text), pgjobs.pgj_call_syntax_(text, int, text, boolean),
    pgjobs.pgj_require_(text, int, text, text),
    pgjobs.pgj_schedule_create_(text, text), pgjobs.pgj_schedule_update_(text, text),
    pgjobs.pgj_schedule_drop_(text, boolean), pgjobs.pgj_schedule_drop_unused_(),
    pgjobs.pgj_job_create_(text, text, text, oid, text, text, boolean),
    pgjobs.pgj_job_update_(text, text, text, oid, text),
    pgjobs.pgj_job_schedule_add_(text, text), pgjobs.pgj_job_schedule_drop_(text, text),
    pgjobs.pgj_job_drop_(text),
    -- the views, as the querying role
    pgjobs.pgj_visible_(oid, oid), pgjobs.pgj_role_(name),
    -- the agent's guard, on the owner's session
    pgjobs.pgj_run_check_(oid, text)
TO PUBLIC;

-- Jobs stored by version 1 keep their calls unresolved (jobfuncoid NULL): the agent does not run
-- them, and records each fire as failed, saying to set the call again with pgj_update_job. They
-- are not resolved here: resolving parses the owner's text, which may run the input functions and
-- domain checks of the owner's types, and the upgrade runs as a superuser.

-- pgj_require_ also caps names: a job or schedule name is at most 200 characters.
CREATE OR REPLACE FUNCTION pgjobs.pgj_require_(p_function text, p_argno int, p_what text, p_value text) RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF p_value IS NULL THEN
        RAISE EXCEPTION '%: argument % (%) must not be NULL', p_function, p_argno, p_what
            USING ERRCODE = 'null_value_not_allowed';
    ELSIF btrim(p_value) = '' THEN
        RAISE EXCEPTION '%: argument % (%) must not be empty', p_function, p_argno, p_what
            USING ERRCODE = 'invalid_parameter_value';
    ELSIF p_what LIKE '%name' AND length(p_value) > 200 THEN
        RAISE EXCEPTION '%: argument % (%) is % characters long; at most 200 are allowed', p_function, p_argno, p_what, length(p_value)
            USING ERRCODE = 'program_limit_exceeded';
    END IF;
END
$$;
