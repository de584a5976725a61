-- pgjobs schema version 1, part 2: the tables of the specification (section 5) and the run history.
-- They are hidden from PUBLIC: roles use the pgj_* functions and views.

CREATE TABLE pgjobs.pgj_schedule_ (
    schid      int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    schname    text NOT NULL CONSTRAINT pgj_schedule_name_unique UNIQUE,
    schtype    char(1) NOT NULL CHECK (schtype IN ('D', 'W', 'I')),
    schyear    int,      -- NULL when the schedule does not give the field
    schmonth   int,
    schday     int,      -- D: day of month (negative: from the end), W: weekday, I: days
    schhour    int,
    schminute  int NOT NULL,
    schtext    text NOT NULL, -- the canonical text, as schedule.Schedule.String writes it
    schowner   name NOT NULL,
    schcreated timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE pgjobs.pgj_job_ (
    jobid          int GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    jobname        text NOT NULL CONSTRAINT pgj_job_name_unique UNIQUE,
    jobfunction    text NOT NULL, -- one function call, run as SELECT <jobfunction>
    jobisstartup   boolean NOT NULL DEFAULT false,
    jobstartschid  int REFERENCES pgjobs.pgj_schedule_ (schid),
    jobstartset    timestamptz NOT NULL DEFAULT now(), -- when the start schedule was last set: it gates from here
    jobowner       name NOT NULL,
    jobcreated     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON pgjobs.pgj_job_ (jobstartschid);

CREATE TABLE pgjobs.pgj_job_schedule_ (
    jsjobid int NOT NULL REFERENCES pgjobs.pgj_job_ (jobid) ON DELETE CASCADE,
    jschid  int NOT NULL REFERENCES pgjobs.pgj_schedule_ (schid),
    PRIMARY KEY (jsjobid, jschid)
);
CREATE INDEX ON pgjobs.pgj_job_schedule_ (jschid);

-- The agent's state of each job: only the agent writes here, so that a role's open transaction on
-- its job (pgj_update_job locks the row) never blocks the agent.
CREATE TABLE pgjobs.pgj_fire_ (
    firejobid      int PRIMARY KEY REFERENCES pgjobs.pgj_job_ (jobid) ON DELETE CASCADE,
    firelast       timestamptz, -- the latest fire claimed (run, skipped or missed): no agent fires it again
    firenext       timestamptz, -- the next planned fire
    firelastrun    timestamptz, -- when the last run started
    firelaststatus text         -- and how it ended
);

-- The active agent's fencing token: each agent that takes the leader lock increments the epoch,
-- and claims fires only with its own, so an agent that lost the lock without noticing fires nothing.
CREATE TABLE pgjobs.pgj_leader_ (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    epoch     bigint NOT NULL DEFAULT 0,
    agent     text,          -- the agent holding it
    since     timestamptz
);
INSERT INTO pgjobs.pgj_leader_ DEFAULT VALUES;

-- The run history, written by the agent. A job's runs outlive the job (runjobid becomes NULL).
CREATE TABLE pgjobs.pgj_run_ (
    runid        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    runjobid     int REFERENCES pgjobs.pgj_job_ (jobid) ON DELETE SET NULL,
    runjobname   text NOT NULL,
    runowner     name NOT NULL,
    runscheduled timestamptz,          -- the fire time; NULL for a startup run
    runstarted   timestamptz,          -- NULL for skipped and missed fires
    runfinished  timestamptz,
    runstatus    text NOT NULL CHECK (runstatus IN ('running', 'ok', 'error', 'skipped', 'missed', 'cancelled', 'abandoned')),
    runsqlstate  text,
    runmessage   text,
    runagent     text,                 -- which agent ran it: host, process id and agent id
    runsession   int,                  -- the backend pid of the session the run ran on
    runsessionstart timestamptz        -- and its backend_start: while that session lives, the run goes on
);
CREATE INDEX ON pgjobs.pgj_run_ (runstatus) WHERE runstatus = 'running';
CREATE INDEX ON pgjobs.pgj_run_ (runjobid, runstarted);
CREATE INDEX ON pgjobs.pgj_run_ (runfinished);

REVOKE ALL ON pgjobs.pgj_version_, pgjobs.pgj_setting_, pgjobs.pgj_schedule_, pgjobs.pgj_job_,
    pgjobs.pgj_job_schedule_, pgjobs.pgj_fire_, pgjobs.pgj_leader_, pgjobs.pgj_run_ FROM PUBLIC;

-- One notification per transaction that changes what fires: PostgreSQL folds identical
-- notifications of one transaction into one. The agent listens on channel pgjobs.
CREATE FUNCTION pgjobs.pgj_notify_() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pg_notify('pgjobs', 'changed');
    RETURN NULL;
END
$$;

CREATE TRIGGER pgj_schedule_notify AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON pgjobs.pgj_schedule_
    FOR EACH STATEMENT EXECUTE FUNCTION pgjobs.pgj_notify_();
CREATE TRIGGER pgj_job_schedule_notify AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON pgjobs.pgj_job_schedule_
    FOR EACH STATEMENT EXECUTE FUNCTION pgjobs.pgj_notify_();
-- The agent's own writes (pgj_fire_, pgj_run_) do not wake it.
CREATE TRIGGER pgj_job_notify AFTER INSERT OR DELETE OR UPDATE OR TRUNCATE ON pgjobs.pgj_job_
    FOR EACH STATEMENT EXECUTE FUNCTION pgjobs.pgj_notify_();
