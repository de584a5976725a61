-- pgjobs schema version 1, part 3: the pgj_* API of the specification (section 3) and its views.
--
-- The functions that write are SECURITY DEFINER: the tables stay hidden from PUBLIC. Each records
-- the calling role (pgj_caller_) as the owner, and a role sees and changes only its own schedules
-- and jobs (superusers see all). Another role's object reads as one that does not exist, so an
-- error tells nothing about it. Names are unique in the database.
-- The functions that take a job's function call check it in the caller's session first (its
-- search_path and privileges), so they are SECURITY INVOKER wrappers around definer functions.

-- pgj_require_ raises when an argument that must have a value is NULL or empty.
CREATE FUNCTION pgjobs.pgj_require_(p_function text, p_argno int, p_what text, p_value text) RETURNS void
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
    END IF;
END
$$;

-- pgj_schedule_find_ returns the caller's schedule named p_name, locked, or raises.
CREATE FUNCTION pgjobs.pgj_schedule_find_(p_function text, p_argno int, p_name text) RETURNS pgjobs.pgj_schedule_
LANGUAGE plpgsql
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    target pgj_schedule_;
BEGIN
    PERFORM pgj_require_(p_function, p_argno, 'schedule name', p_name);
    SELECT * INTO target FROM pgj_schedule_ WHERE schname = p_name AND pgj_visible_(schowner) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: argument %: schedule "%" does not exist', p_function, p_argno, p_name
            USING ERRCODE = 'undefined_object', HINT = 'SELECT name FROM pgj_schedules lists your schedules';
    END IF;
    RETURN target;
END
$$;

-- pgj_job_find_ returns the caller's job named p_name, locked, or raises.
CREATE FUNCTION pgjobs.pgj_job_find_(p_function text, p_argno int, p_name text) RETURNS pgjobs.pgj_job_
LANGUAGE plpgsql
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    target pgj_job_;
BEGIN
    PERFORM pgj_require_(p_function, p_argno, 'job name', p_name);
    SELECT * INTO target FROM pgj_job_ WHERE jobname = p_name AND pgj_visible_(jobowner) FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION '%: argument %: job "%" does not exist', p_function, p_argno, p_name
            USING ERRCODE = 'undefined_object', HINT = 'SELECT name FROM pgj_jobs lists your jobs';
    END IF;
    RETURN target;
END
$$;

-- pgj_schedule_for_job_ returns the schedule a job of p_owner may use: one of the same owner.
CREATE FUNCTION pgjobs.pgj_schedule_for_job_(p_function text, p_argno int, p_name text, p_owner name) RETURNS pgjobs.pgj_schedule_
LANGUAGE plpgsql
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    target pgj_schedule_ := pgj_schedule_find_(p_function, p_argno, p_name);
BEGIN
    IF target.schowner <> p_owner THEN
        RAISE EXCEPTION '%: argument %: schedule "%" belongs to role %, the job to role %', p_function, p_argno, p_name, target.schowner, p_owner
            USING ERRCODE = 'insufficient_privilege', HINT = 'a job uses only schedules of its own owner';
    END IF;
    RETURN target;
END
$$;

-- pgj_call_syntax_ checks that p_call is one function call, such as off_line() or f(1, 'x'), and
-- returns it without surrounding blanks.
CREATE FUNCTION pgjobs.pgj_call_syntax_(p_function text, p_argno int, p_call text) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    call  text;
    n     int;
    i     int := 1;
    c     text;
    depth int := 0;
    quote text; -- the quote character we are inside, or NULL
    name_parts int := 0;
    problem text;
BEGIN
    PERFORM pgjobs.pgj_require_(p_function, p_argno, 'function call', p_call);
    call := btrim(p_call, E' \t\r\n');
    n := length(call);
    -- [schema.]name: plain or double-quoted identifiers
    LOOP
        IF substr(call, i, 1) = '"' THEN
            IF strpos(substr(call, i + 1), '"') = 0 THEN
                problem := 'has an unterminated quoted name';
                EXIT;
            END IF;
            i := i + strpos(substr(call, i + 1), '"') + 1;
        ELSIF substr(call, i) ~ '^[A-Za-z_]' THEN
            i := i + length(substring(substr(call, i) FROM '^[A-Za-z_][A-Za-z0-9_$]*'));
        ELSE
            problem := 'does not start with a function name';
            EXIT;
        END IF;
        name_parts := name_parts + 1;
        EXIT WHEN substr(call, i, 1) <> '.' OR name_parts = 2;
        i := i + 1;
    END LOOP;
    IF problem IS NULL THEN
        WHILE substr(call, i, 1) IN (' ', E'\t', E'\n', E'\r') LOOP i := i + 1; END LOOP;
        IF substr(call, i, 1) <> '(' THEN
            problem := 'has no argument list: write the call with parentheses, such as off_line()';
        END IF;
    END IF;
    -- The argument list, to its matching parenthesis, minding quotes.
    WHILE problem IS NULL AND i <= n LOOP
        c := substr(call, i, 1);
        IF quote IS NOT NULL THEN
            IF c = quote THEN
                IF substr(call, i + 1, 1) = quote THEN
                    i := i + 1; -- a doubled quote stands for itself
                ELSE
                    quote := NULL;
                END IF;
            END IF;
        ELSIF c IN ('''', '"') THEN
            quote := c;
        ELSIF c = ';' THEN
            problem := 'contains a semicolon: a job runs one function call';
        ELSIF substr(call, i, 2) IN ('--', '/*') THEN
            problem := 'contains a comment';
        ELSIF c = '(' THEN
            depth := depth + 1;
        ELSIF c = ')' THEN
            depth := depth - 1;
            IF depth = 0 THEN
                IF i < n AND strpos(substr(call, i + 1), ';') > 0 THEN
                    problem := 'contains a semicolon: a job runs one function call';
                ELSIF i < n THEN
                    problem := format('has text after the call''s closing parenthesis: %s', substr(call, i + 1));
                END IF;
                EXIT;
            END IF;
        END IF;
        i := i + 1;
    END LOOP;
    IF problem IS NULL AND (quote IS NOT NULL OR depth <> 0) THEN
        problem := CASE WHEN quote IS NOT NULL THEN 'has an unterminated quote' ELSE 'has unbalanced parentheses' END;
    END IF;
    IF problem IS NOT NULL THEN
        RAISE EXCEPTION '%: argument % (function call) % is not one function call: it %', p_function, p_argno, quote_literal(p_call), problem
            USING ERRCODE = 'syntax_error', HINT = 'write one call such as off_line() or f(1, ''x'')';
    END IF;
    RETURN call;
END
$$;

-- pgj_call_resolves_ checks, in the caller's session, that the function call resolves, by
-- preparing SELECT <call> without running it.
CREATE FUNCTION pgjobs.pgj_call_resolves_(p_function text, p_argno int, p_call text) RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF EXISTS (SELECT FROM pg_catalog.pg_prepared_statements WHERE name = 'pgj_check_call_') THEN
        DEALLOCATE pgj_check_call_;
    END IF;
    BEGIN
        EXECUTE 'PREPARE pgj_check_call_ AS SELECT ' || p_call;
    EXCEPTION WHEN OTHERS THEN
        RAISE EXCEPTION '%: argument % (function call) % does not resolve: %', p_function, p_argno, quote_literal(p_call), SQLERRM
            USING ERRCODE = SQLSTATE, HINT = 'create the function first, or fix its name, schema or arguments';
    END;
    DEALLOCATE pgj_check_call_;
END
$$;

-- Schedules.

CREATE FUNCTION pgjobs.pgj_create_schedule(p_name text, p_schedule text) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    s  record;
    id int;
BEGIN
    PERFORM pgj_require_('pgj_create_schedule', 1, 'schedule name', p_name);
    s := pgj_parse_schedule_(p_schedule, 'argument 2 of pgj_create_schedule');
    INSERT INTO pgj_schedule_ (schname, schtype, schyear, schmonth, schday, schhour, schminute, schtext, schowner)
    VALUES (p_name, s.schtype, s.schyear, s.schmonth, s.schday, s.schhour, s.schminute, s.schcanonical, pgj_caller_())
    RETURNING schid INTO id;
    RETURN id;
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'pgj_create_schedule: argument 1: schedule name "%" is already taken', p_name
        USING ERRCODE = 'duplicate_object', HINT = 'schedule names are unique in the database; choose another';
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_create_schedule(text, text) IS 'Creates schedule $1 with definition $2, such as ''D 6:30''';

CREATE FUNCTION pgjobs.pgj_update_schedule(p_name text, p_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    target pgj_schedule_ := pgj_schedule_find_('pgj_update_schedule', 1, p_name);
    s record := pgj_parse_schedule_(p_schedule, 'argument 2 of pgj_update_schedule');
BEGIN
    UPDATE pgj_schedule_
    SET schtype = s.schtype, schyear = s.schyear, schmonth = s.schmonth, schday = s.schday,
        schhour = s.schhour, schminute = s.schminute, schtext = s.schcanonical
    WHERE schid = target.schid;
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_update_schedule(text, text) IS 'Changes the definition of schedule $1 to $2';

CREATE FUNCTION pgjobs.pgj_drop_schedule(p_name text, p_force boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    target pgj_schedule_ := pgj_schedule_find_('pgj_drop_schedule', 1, p_name);
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
COMMENT ON FUNCTION pgjobs.pgj_drop_schedule(text, boolean) IS 'Drops schedule $1; if jobs use it, fails unless $2 is true, which detaches it from them';

CREATE FUNCTION pgjobs.pgj_drop_unused_schedules() RETURNS int
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    dropped int;
BEGIN
    DELETE FROM pgj_schedule_ s
    WHERE pgj_visible_(s.schowner)
      AND NOT EXISTS (SELECT FROM pgj_job_schedule_ js WHERE js.jschid = s.schid)
      AND NOT EXISTS (SELECT FROM pgj_job_ j WHERE j.jobstartschid = s.schid);
    GET DIAGNOSTICS dropped = ROW_COUNT;
    RETURN dropped;
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_drop_unused_schedules() IS 'Drops your schedules that no job uses; returns how many';

-- Jobs.

CREATE FUNCTION pgjobs.pgj_create_job_(p_caller text, p_name text, p_call text, p_start text, p_recurrence text, p_startup boolean) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    owner name := pgj_caller_();
    call  text;
    start_id int;
    recurrence_id int;
    id int;
BEGIN
    PERFORM pgj_require_(p_caller, 1, 'job name', p_name);
    call := pgj_call_syntax_(p_caller, 2, p_call);
    IF nullif(p_start, '') IS NOT NULL THEN
        start_id := (pgj_schedule_for_job_(p_caller, 3, p_start, owner)).schid;
    END IF;
    IF nullif(p_recurrence, '') IS NOT NULL THEN
        recurrence_id := (pgj_schedule_for_job_(p_caller, 4, p_recurrence, owner)).schid;
    END IF;
    BEGIN
        INSERT INTO pgj_job_ (jobname, jobfunction, jobisstartup, jobstartschid, jobowner)
        VALUES (p_name, call, p_startup, start_id, owner)
        RETURNING jobid INTO id;
    EXCEPTION WHEN unique_violation THEN
        RAISE EXCEPTION '%: argument 1: job name "%" is already taken', p_caller, p_name
            USING ERRCODE = 'duplicate_object', HINT = 'job names are unique in the database; choose another';
    END;
    IF recurrence_id IS NOT NULL THEN
        INSERT INTO pgj_job_schedule_ (jsjobid, jschid) VALUES (id, recurrence_id);
    END IF;
    RETURN id;
END
$$;

CREATE FUNCTION pgjobs.pgj_create_job(p_name text, p_function text, p_start_schedule text, p_schedule text) RETURNS int
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pgjobs.pgj_call_resolves_('pgj_create_job', 2, pgjobs.pgj_call_syntax_('pgj_create_job', 2, p_function));
    RETURN pgjobs.pgj_create_job_('pgj_create_job', p_name, p_function, p_start_schedule, p_schedule, false);
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_create_job(text, text, text, text) IS 'Creates job $1 running function call $2, waiting for start schedule $3 (or NULL), recurring on schedule $4 (or NULL)';

CREATE FUNCTION pgjobs.pgj_create_startup_job(p_name text, p_function text) RETURNS int
LANGUAGE plpgsql
AS $$
BEGIN
    PERFORM pgjobs.pgj_call_resolves_('pgj_create_startup_job', 2, pgjobs.pgj_call_syntax_('pgj_create_startup_job', 2, p_function));
    RETURN pgjobs.pgj_create_job_('pgj_create_startup_job', p_name, p_function, NULL, NULL, true);
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_create_startup_job(text, text) IS 'Creates job $1 running function call $2 each time the agent starts';

CREATE FUNCTION pgjobs.pgj_update_job_(p_name text, p_new_name text, p_new_call text, p_new_start text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    target pgj_job_ := pgj_job_find_('pgj_update_job', 1, p_name);
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
        UPDATE pgj_job_ SET jobfunction = pgj_call_syntax_('pgj_update_job', 3, p_new_call) WHERE jobid = target.jobid;
    END IF;
    IF p_new_start = '' THEN
        UPDATE pgj_job_ SET jobstartschid = NULL, jobstartset = now() WHERE jobid = target.jobid;
    ELSIF p_new_start IS NOT NULL THEN
        UPDATE pgj_job_ SET jobstartschid = (pgj_schedule_for_job_('pgj_update_job', 4, p_new_start, target.jobowner)).schid,
                            jobstartset = now()
        WHERE jobid = target.jobid;
    END IF;
END
$$;

CREATE FUNCTION pgjobs.pgj_update_job(p_name text, p_new_name text, p_new_function text, p_new_start_schedule text) RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF p_new_function IS NOT NULL THEN
        PERFORM pgjobs.pgj_call_resolves_('pgj_update_job', 3, pgjobs.pgj_call_syntax_('pgj_update_job', 3, p_new_function));
    END IF;
    PERFORM pgjobs.pgj_update_job_(p_name, p_new_name, p_new_function, p_new_start_schedule);
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_update_job(text, text, text, text) IS 'Changes job $1: new name $2, new function call $3, new start schedule $4 (NULL keeps a value, '''' removes the start schedule)';

CREATE FUNCTION pgjobs.pgj_add_job_schedule(p_job text, p_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    job pgj_job_ := pgj_job_find_('pgj_add_job_schedule', 1, p_job);
    sch pgj_schedule_ := pgj_schedule_for_job_('pgj_add_job_schedule', 2, p_schedule, job.jobowner);
BEGIN
    INSERT INTO pgj_job_schedule_ (jsjobid, jschid) VALUES (job.jobid, sch.schid);
EXCEPTION WHEN unique_violation THEN
    RAISE EXCEPTION 'pgj_add_job_schedule: job "%" already recurs on schedule "%"', p_job, p_schedule
        USING ERRCODE = 'duplicate_object';
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_add_job_schedule(text, text) IS 'Makes job $1 recur on schedule $2 too';

CREATE FUNCTION pgjobs.pgj_drop_job_schedule(p_job text, p_schedule text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    job pgj_job_ := pgj_job_find_('pgj_drop_job_schedule', 1, p_job);
    sch pgj_schedule_ := pgj_schedule_find_('pgj_drop_job_schedule', 2, p_schedule);
BEGIN
    DELETE FROM pgj_job_schedule_ WHERE jsjobid = job.jobid AND jschid = sch.schid;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'pgj_drop_job_schedule: job "%" does not recur on schedule "%"', p_job, p_schedule
            USING ERRCODE = 'undefined_object';
    END IF;
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_drop_job_schedule(text, text) IS 'Stops job $1 recurring on schedule $2';

CREATE FUNCTION pgjobs.pgj_drop_job(p_name text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    job pgj_job_ := pgj_job_find_('pgj_drop_job', 1, p_name);
BEGIN
    DELETE FROM pgj_job_ WHERE jobid = job.jobid;
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_drop_job(text) IS 'Drops job $1; its schedules stay';

-- Views. security_barrier: no function of a caller's query sees rows before the owner filter.

CREATE VIEW pgjobs.pgj_schedules WITH (security_barrier) AS
SELECT s.schname AS name,
       s.schtext AS schedule,
       s.schtype AS type,
       ARRAY(SELECT j.jobname FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_job_ j ON j.jobid = js.jsjobid
             WHERE js.jschid = s.schid ORDER BY j.jobname) AS jobs,
       ARRAY(SELECT j.jobname FROM pgjobs.pgj_job_ j WHERE j.jobstartschid = s.schid ORDER BY j.jobname) AS start_of_jobs,
       s.schowner AS owner,
       s.schcreated AS created
FROM pgjobs.pgj_schedule_ s
WHERE pgjobs.pgj_visible_(s.schowner);
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
       j.jobowner AS owner,
       j.jobcreated AS created
FROM pgjobs.pgj_job_ j
LEFT JOIN pgjobs.pgj_schedule_ st ON st.schid = j.jobstartschid
LEFT JOIN pgjobs.pgj_fire_ f ON f.firejobid = j.jobid
WHERE pgjobs.pgj_visible_(j.jobowner);
COMMENT ON VIEW pgjobs.pgj_jobs IS 'Your jobs, their function calls, start schedule, recurrence schedules (names and definitions in the same order), next and last run';

CREATE VIEW pgjobs.pgj_runs WITH (security_barrier) AS
SELECT r.runjobname AS job, r.runscheduled AS scheduled, r.runstarted AS started, r.runfinished AS finished,
       r.runstatus AS status, r.runsqlstate AS sqlstate, r.runmessage AS message, r.runowner AS owner, r.runagent AS agent
FROM pgjobs.pgj_run_ r
WHERE pgjobs.pgj_visible_(r.runowner);
COMMENT ON VIEW pgjobs.pgj_runs IS 'The run history of your jobs';

GRANT SELECT ON pgjobs.pgj_schedules, pgjobs.pgj_jobs, pgjobs.pgj_runs TO PUBLIC;
