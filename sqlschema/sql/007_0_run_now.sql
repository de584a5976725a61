-- pgjobs schema version 7: run a job now. pgj_run_job asks the active agent to run one of your jobs
-- at once (pgjobs run): a request row, which the agent takes on its wake-up channel (NOTIFY
-- pgjobs_run) and runs like any run, on a session of the job's owner, recorded with the request's
-- id (pgj_runs.request). Only the job's owner or a superuser may ask; the rows are written by
-- definer functions only, so no role can take, change or lock another's request.
SET LOCAL search_path = pg_catalog, pg_temp;

CREATE TABLE pgjobs.pgj_request_ (
    reqid      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    reqjobid   int NOT NULL,         -- no foreign key: a job dropped meanwhile gets its request answered
    reqjobname text NOT NULL,
    reqownerid oid NOT NULL,         -- the job's owner when asked: who sees the request
    reqby      oid NOT NULL,         -- the role that asked: the owner or a superuser
    reqat      timestamptz NOT NULL DEFAULT now(),
    reqtaken   timestamptz,          -- when an agent took it; NULL while it waits
    reqepoch   bigint,               -- the lead's epoch that took it
    reqerror   text                  -- why the job did not run, when it did not
);
-- At most one request waits per job: asking again while one waits returns it.
CREATE UNIQUE INDEX pgj_request_waiting ON pgjobs.pgj_request_ (reqjobid) WHERE reqtaken IS NULL;
-- For the limit of requests per role and minute.
CREATE INDEX pgj_request_by ON pgjobs.pgj_request_ (reqby, reqat);
REVOKE ALL ON pgjobs.pgj_request_ FROM PUBLIC;

-- The request of a run started by hand; NULL for a run on a schedule or at startup.
ALTER TABLE pgjobs.pgj_run_ ADD COLUMN runrequest bigint;
CREATE INDEX pgj_run_request ON pgjobs.pgj_run_ (runrequest) WHERE runrequest IS NOT NULL;

CREATE OR REPLACE VIEW pgjobs.pgj_runs WITH (security_barrier) AS
SELECT r.runjobname AS job, r.runscheduled AS scheduled, r.runstarted AS started, r.runfinished AS finished,
       r.runstatus AS status, r.runsqlstate AS sqlstate, r.runmessage AS message,
       coalesce(pg_catalog.pg_get_userbyid(r.runownerid)::text, r.runowner) AS owner, r.runagent AS agent,
       r.rundetail AS detail, r.runhint AS hint, r.runcontext AS context,
       r.runfinished OPERATOR(pg_catalog.-) r.runstarted AS duration,
       r.runrequest AS request
FROM pgjobs.pgj_run_ r
WHERE pgjobs.pgj_visible_(r.runownerid, pgjobs.pgj_role_(current_user));
COMMENT ON VIEW pgjobs.pgj_runs IS 'The run history of your jobs; request is set on a run started by hand (pgj_run_job)';

-- pgj_run_requests shows your requests to run a job now, each with its run once the agent
-- recorded it.
CREATE VIEW pgjobs.pgj_run_requests WITH (security_barrier) AS
SELECT q.reqid AS id, q.reqjobname AS job, pg_catalog.pg_get_userbyid(q.reqby)::text AS requested_by,
       q.reqat AS requested, q.reqtaken AS taken, q.reqerror AS error,
       r.runstatus AS status, r.runstarted AS started, r.runfinished AS finished,
       r.runsqlstate AS sqlstate, r.runmessage AS message
FROM pgjobs.pgj_request_ q
LEFT JOIN pgjobs.pgj_run_ r ON r.runrequest OPERATOR(pg_catalog.=) q.reqid
WHERE pgjobs.pgj_visible_(q.reqownerid, pgjobs.pgj_role_(current_user));
COMMENT ON VIEW pgjobs.pgj_run_requests IS 'Your requests to run a job now (pgj_run_job), with their runs';
GRANT SELECT ON pgjobs.pgj_run_requests TO PUBLIC;

-- pgj_job_request_ files the caller's request to run its job p_name now, or returns the one that
-- waits already; a paused job is refused, and so is a role past 100 requests a minute. Finding
-- the job locks its row, so two requests for one job never race.
CREATE FUNCTION pgjobs.pgj_job_request_(p_function text, p_name text) RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    caller oid := pgj_caller_take_(p_function);
    job pgj_job_ := pgj_job_find_(p_function, 1, p_name, caller);
    id bigint;
BEGIN
    IF job.jobpaused THEN
        RAISE EXCEPTION '%: argument 1: job "%" is paused: it is not run', p_function, p_name
            USING ERRCODE = 'object_not_in_prerequisite_state', HINT = 'pgj_resume_job resumes it';
    END IF;
    -- A role that is no superuser files at most 100 requests a minute: a loop of requests cannot
    -- fill the table or keep the agent taking and answering them.
    IF NOT coalesce((SELECT rolsuper FROM pg_roles WHERE oid = caller), false)
       AND (SELECT count(*) FROM pgj_request_ WHERE reqby = caller AND reqat > now() - interval '1 minute') >= 100 THEN
        RAISE EXCEPTION '%: role % asked to run jobs 100 times in the last minute', p_function, pg_get_userbyid(caller)
            USING ERRCODE = 'program_limit_exceeded', HINT = 'ask again in a minute';
    END IF;
    SELECT reqid INTO id FROM pgj_request_ WHERE reqjobid = job.jobid AND reqtaken IS NULL;
    IF FOUND THEN
        RETURN id;
    END IF;
    INSERT INTO pgj_request_ (reqjobid, reqjobname, reqownerid, reqby)
    VALUES (job.jobid, job.jobname, job.jobownerid, caller)
    RETURNING reqid INTO id;
    PERFORM pg_notify('pgjobs_run', '');
    RETURN id;
END
$$;

CREATE FUNCTION pgjobs.pgj_run_job(p_name text) RETURNS bigint
LANGUAGE plpgsql SECURITY INVOKER
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_stamp_();
    RETURN pgjobs.pgj_job_request_('pgj_run_job', p_name);
END
$$;
COMMENT ON FUNCTION pgjobs.pgj_run_job(text) IS 'Asks the active agent to run your job now, and returns the request''s id (pgj_run_requests): the run is recorded like any run, with that id as its request; a paused job is refused, and one whose run goes on is not run (the request says why)';

REVOKE ALL ON FUNCTION pgjobs.pgj_job_request_(text, text), pgjobs.pgj_run_job(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION pgjobs.pgj_run_job(text), pgjobs.pgj_job_request_(text, text) TO PUBLIC;
