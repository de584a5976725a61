-- pgjobs schema version 3, part 1: a failed run keeps what PostgreSQL reported with its error
-- (DETAIL, HINT, CONTEXT besides the SQLSTATE and the message), and pgj_runs shows it with the
-- run's duration.
SET LOCAL search_path = pg_catalog, pg_temp;

ALTER TABLE pgjobs.pgj_run_
    ADD COLUMN rundetail  text,
    ADD COLUMN runhint    text, -- the error's hint, or the agent's when it refused to run the job
    ADD COLUMN runcontext text;

CREATE OR REPLACE VIEW pgjobs.pgj_runs WITH (security_barrier) AS
SELECT r.runjobname AS job, r.runscheduled AS scheduled, r.runstarted AS started, r.runfinished AS finished,
       r.runstatus AS status, r.runsqlstate AS sqlstate, r.runmessage AS message,
       coalesce(pg_catalog.pg_get_userbyid(r.runownerid)::text, r.runowner) AS owner, r.runagent AS agent,
       r.rundetail AS detail, r.runhint AS hint, r.runcontext AS context,
       r.runfinished OPERATOR(pg_catalog.-) r.runstarted AS duration
FROM pgjobs.pgj_run_ r
WHERE pgjobs.pgj_visible_(r.runownerid, pgjobs.pgj_role_(current_user));
COMMENT ON VIEW pgjobs.pgj_runs IS 'The run history of your jobs';
