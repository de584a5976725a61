-- pgjobs schema version 3, part 3: what a DBA needs daily. A job can be paused and resumed without
-- losing its schedules, and given a time limit; the settings (run_retention) can be read and, by a
-- superuser, changed with SQL. The same security rules as the rest of the API: the public
-- functions stamp the caller (current_user) and a definer function acts for that role only.
SET LOCAL search_path = pg_catalog, pg_temp;

ALTER TABLE pgjobs.pgj_job_
    ADD COLUMN jobpaused  boolean NOT NULL DEFAULT false, -- fires while paused are neither run nor missed
    ADD COLUMN jobresumed timestamptz,                    -- when it was last resumed: no fire before counts
    ADD COLUMN jobtimeout interval;                       -- a run over it is cancelled; NULL: none

-- pgj_job_pause_ pauses (p_paused) or resumes the caller's job. A paused job keeps its schedules;
-- the agent plans nothing for it. Resuming stamps the job: the agent plans it from then on and
-- counts no fire before as missed. Only the caller's pgj_job_ row is written: the agent's own
-- tables are never locked by a role's transaction.
CREATE FUNCTION pgjobs.pgj_job_pause_(p_function text, p_name text, p_paused boolean) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_(p_function);
    job pgj_job_ := pgj_job_find_(p_function, 1, p_name, caller);
BEGIN
    IF job.jobpaused = p_paused THEN
        RETURN; -- already so
    END IF;
    UPDATE pgj_job_ SET jobpaused = p_paused, jobresumed = CASE WHEN p_paused THEN jobresumed ELSE now() END
    WHERE jobid = job.jobid;
END
$$;

CREATE FUNCTION pgjobs.pgj_pause_job(p_name text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_job_pause_('pgj_pause_job', p_name, true);
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_pause_job(text) IS 'Pauses your job: it keeps its schedules, and its fires are neither run nor recorded as missed until pgj_resume_job';

CREATE FUNCTION pgjobs.pgj_resume_job(p_name text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_job_pause_('pgj_resume_job', p_name, false);
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_resume_job(text) IS 'Resumes your paused job: it fires again from now on';

-- pgj_job_timeout_ sets the time limit of the caller's job (NULL: none).
CREATE FUNCTION pgjobs.pgj_job_timeout_(p_name text, p_timeout interval) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_set_job_timeout');
    job pgj_job_ := pgj_job_find_('pgj_set_job_timeout', 1, p_name, caller);
BEGIN
    -- At most 24 days: PostgreSQL's statement_timeout, which enforces it, counts milliseconds in
    -- 32 bits.
    IF p_timeout IS NOT NULL AND (p_timeout < interval '1 second' OR p_timeout > interval '24 days') THEN
        RAISE EXCEPTION 'pgj_set_job_timeout: argument 2: the time limit % is out of range 1 second .. 24 days', p_timeout
            USING ERRCODE = 'invalid_parameter_value', HINT = 'NULL removes the limit';
    END IF;
    UPDATE pgj_job_ SET jobtimeout = p_timeout WHERE jobid = job.jobid;
END
$$;

CREATE FUNCTION pgjobs.pgj_set_job_timeout(p_name text, p_timeout interval) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_job_timeout_(p_name, p_timeout);
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_set_job_timeout(text, interval) IS 'Sets the time limit of your job''s runs, 1 second to 24 days (NULL: none); a run over it is cancelled and recorded as failed';

-- late_limit: how late an agent still runs a fire that fell due while no agent could run it (an
-- agent starting, or taking over from one that died or hung); an older fire is recorded as missed.
INSERT INTO pgjobs.pgj_setting_ (name, value) VALUES ('late_limit', '00:00:30');

-- The settings, readable by every role; pgj_set_setting changes one, for superusers only.
CREATE VIEW pgjobs.pgj_settings AS
SELECT s.name, s.value,
       CASE s.name
           WHEN 'run_retention' THEN 'how long the agent keeps the run history (an interval)'
           WHEN 'late_limit' THEN 'how late an agent still runs a fire that fell due while no agent could run it; an older one is recorded as missed (an interval)'
       END AS description
FROM pgjobs.pgj_setting_ s;
COMMENT ON VIEW pgjobs.pgj_settings IS 'The settings of pgjobs in this database; a superuser changes them with pgj_set_setting';

CREATE FUNCTION pgjobs.pgj_setting_set_(p_name text, p_value text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_('pgj_set_setting');
    v interval;
    lo interval;
    hi interval;
    range text;
    example text;
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE oid = caller) IS NOT TRUE THEN
        RAISE EXCEPTION 'pgj_set_setting: only a superuser may change the settings'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    PERFORM pgj_require_('pgj_set_setting', 1, 'setting name', p_name);
    PERFORM pgj_require_('pgj_set_setting', 2, 'value', p_value);
    -- Each setting is an interval within its range.
    CASE p_name
    WHEN 'run_retention' THEN lo := interval '1 hour'; hi := interval '100 years'; range := '1 hour .. 100 years'; example := '30 days';
    WHEN 'late_limit' THEN lo := interval '1 second'; hi := interval '1 hour'; range := '1 second .. 1 hour'; example := '30 seconds';
    ELSE
        RAISE EXCEPTION 'pgj_set_setting: argument 1: no setting "%"', p_name
            USING ERRCODE = 'undefined_object', HINT = 'SELECT name FROM pgj_settings lists them';
    END CASE;
    BEGIN
        v := p_value::interval;
    EXCEPTION WHEN others THEN
        RAISE EXCEPTION 'pgj_set_setting: argument 2: % "%" is not an interval', p_name, p_value
            USING ERRCODE = 'invalid_parameter_value', HINT = format('for instance %L', example);
    END;
    IF v < lo OR v > hi THEN
        RAISE EXCEPTION 'pgj_set_setting: argument 2: % % is out of range %', p_name, v, range
            USING ERRCODE = 'invalid_parameter_value';
    END IF;
    UPDATE pgj_setting_ SET value = v::text WHERE name = p_name;
END
$$;

CREATE FUNCTION pgjobs.pgj_set_setting(p_name text, p_value text) RETURNS void
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    PERFORM pgjobs.pgj_setting_set_(p_name, p_value);
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_set_setting(text, text) IS 'Changes a setting of pgjobs (superusers only): SELECT pgj_set_setting(''run_retention'', ''90 days'')';

-- pgj_jobs shows paused and timeout: see 003_4_next.sql, which defines the view anew.

GRANT SELECT ON pgjobs.pgj_settings TO PUBLIC;
GRANT EXECUTE ON FUNCTION
    pgjobs.pgj_pause_job(text), pgjobs.pgj_resume_job(text), pgjobs.pgj_set_job_timeout(text, interval),
    pgjobs.pgj_set_setting(text, text),
    -- called by them, as the caller; they act for the stamped caller only
    pgjobs.pgj_job_pause_(text, text, boolean), pgjobs.pgj_job_timeout_(text, interval),
    pgjobs.pgj_setting_set_(text, text)
TO PUBLIC;
