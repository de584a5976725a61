-- pgjobs schema version 5, part 0: asynchronous tasks, the task table in the style of pg_task
-- (docs/tasks.md). A role inserts an SQL text; the active agent runs it as that role and writes the
-- output or the error back into the row.
SET LOCAL search_path = pg_catalog, pg_temp;

CREATE TYPE pgjobs.task_state AS ENUM ('PLAN', 'TAKE', 'WORK', 'DONE', 'FAIL', 'GONE', 'STOP');
COMMENT ON TYPE pgjobs.task_state IS 'PLAN waits, TAKE is claimed, WORK runs, DONE/FAIL/GONE ended, STOP is parked';

-- pgj_task_default_ is a column default of the task table: the setting pgjobs.task_<p_name> of the
-- session (SET, ALTER ROLE/DATABASE ... SET) when it is set, else p_fallback. A setting that does
-- not read as the column's type fails the INSERT with an error naming it.
CREATE FUNCTION pgjobs.pgj_task_default_(p_name text, p_fallback anyelement) RETURNS anyelement
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    setting text := current_setting('pgjobs.task_' || p_name, true);
    v p_fallback%TYPE;
BEGIN
    IF setting IS NULL OR setting = '' THEN
        RETURN p_fallback;
    END IF;
    BEGIN
        v := setting;
    EXCEPTION WHEN others THEN
        RAISE EXCEPTION 'task: the setting pgjobs.task_% = % is not a value of column % (%): %', p_name, quote_literal(setting), p_name, pg_typeof(p_fallback), SQLERRM
            USING ERRCODE = 'invalid_parameter_value', HINT = format('RESET pgjobs.task_%s, or set it to a valid value', p_name);
    END;
    RETURN v;
END
$$;

-- pgj_task_role_ is the role whose privileges the calling code has (current_user), as a regrole.
CREATE FUNCTION pgjobs.pgj_task_role_() RETURNS regrole
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT oid::regrole FROM pg_catalog.pg_roles WHERE rolname = current_user $$;

-- pgj_task_interval_ok_ tells whether an interval is within 0 .. p_max_days, each of its parts
-- (months, days, time) not negative: parts that cancel out ('300000 years -108000000 days') pass
-- a comparison of the whole yet overflow when added to a time.
CREATE FUNCTION pgjobs.pgj_task_interval_ok_(p interval, p_max_days int) RETURNS boolean
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT extract(year FROM p) >= 0 AND extract(month FROM p) >= 0 AND extract(day FROM p) >= 0
       AND extract(hour FROM p) >= 0 AND extract(minute FROM p) >= 0 AND extract(second FROM p) >= 0
       AND (extract(year FROM p) * 12 + extract(month FROM p)) * 30 + extract(day FROM p)
           + (extract(hour FROM p) * 3600 + extract(minute FROM p) * 60 + extract(second FROM p)) / 86400 <= p_max_days
$$;

CREATE TABLE pgjobs.task (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    parent      bigint DEFAULT nullif(current_setting('pgjobs.task_id', true), '')::bigint,
    plan        timestamptz NOT NULL DEFAULT now()
                CONSTRAINT task_plan_range CHECK (isfinite(plan) AND plan < timestamptz '100000-01-01 00:00:00+00'),
    start       timestamptz,
    stop        timestamptz,
    active      interval NOT NULL DEFAULT pgjobs.pgj_task_default_('active', interval '1 hour')
                CONSTRAINT task_active_range CHECK (active > interval '0' AND pgjobs.pgj_task_interval_ok_(active, 36525)),
    live        interval NOT NULL DEFAULT pgjobs.pgj_task_default_('live', interval '0')
                CONSTRAINT task_live_range CHECK (pgjobs.pgj_task_interval_ok_(live, 36525)),
    repeat      interval NOT NULL DEFAULT pgjobs.pgj_task_default_('repeat', interval '0')
                CONSTRAINT task_repeat_range CHECK (pgjobs.pgj_task_interval_ok_(repeat, 36525)),
    timeout     interval NOT NULL DEFAULT pgjobs.pgj_task_default_('timeout', interval '0')
                CONSTRAINT task_timeout_range CHECK (pgjobs.pgj_task_interval_ok_(timeout, 24)),
    count       int NOT NULL DEFAULT pgjobs.pgj_task_default_('count', 0)
                CONSTRAINT task_count_not_negative CHECK (count >= 0),
    max         int NOT NULL DEFAULT pgjobs.pgj_task_default_('max', 0),
    pid         int,
    state       pgjobs.task_state NOT NULL DEFAULT 'PLAN',
    delete      boolean NOT NULL DEFAULT pgjobs.pgj_task_default_('delete', true),
    drift       boolean NOT NULL DEFAULT pgjobs.pgj_task_default_('drift', false),
    header      boolean NOT NULL DEFAULT pgjobs.pgj_task_default_('header', true),
    string      boolean NOT NULL DEFAULT pgjobs.pgj_task_default_('string', true),
    delimiter   "char" NOT NULL DEFAULT pgjobs.pgj_task_default_('delimiter', E'\t'::"char"),
    escape      "char" NOT NULL DEFAULT pgjobs.pgj_task_default_('escape', ''::"char"),
    quote       "char" NOT NULL DEFAULT pgjobs.pgj_task_default_('quote', ''::"char"),
    "null"      text NOT NULL DEFAULT pgjobs.pgj_task_default_('null', '\N'::text),
    save        boolean NOT NULL DEFAULT pgjobs.pgj_task_default_('save', false),
    data        text,
    "group"     text NOT NULL DEFAULT pgjobs.pgj_task_default_('group', 'group'::text),
    input       text NOT NULL,
    output      text,
    error       text,
    remote      text DEFAULT nullif(pgjobs.pgj_task_default_('remote', ''::text), '')
                CONSTRAINT task_remote_not_empty CHECK (remote ~ '\S'),
    owner       regrole NOT NULL DEFAULT pgjobs.pgj_task_role_(),
    priority    int NOT NULL DEFAULT pgjobs.pgj_task_default_('priority', 0),
    attempt     int NOT NULL DEFAULT 0,
    retries     int NOT NULL DEFAULT pgjobs.pgj_task_default_('retries', 0)
                CONSTRAINT task_retries_not_negative CHECK (retries >= 0),
    retry_delay interval NOT NULL DEFAULT pgjobs.pgj_task_default_('retry_delay', interval '10 seconds')
                CONSTRAINT task_retry_delay_range CHECK (pgjobs.pgj_task_interval_ok_(retry_delay, 36525)),
    -- pgjobs addition: the first plan of a repeating task's rows; each next plan is origin plus a
    -- whole number of periods (drift off), whatever retries moved plan to. Set from plan.
    origin      timestamptz,
    -- pgjobs addition: when a waiting one-shot task (repeat 0, max >= 0) expires (plan + active),
    -- kept by the triggers so that the agent finds expired tasks through an index.
    expires     timestamptz,
    CONSTRAINT task_input_not_empty CHECK (input ~ '\S'),
    -- What the agent reads of each task it claims stays small: a role's inputs cannot fill its memory.
    CONSTRAINT task_input_size CHECK (octet_length(input) <= 1048576),
    CONSTRAINT task_data_size CHECK (octet_length(data) <= 1048576),
    CONSTRAINT task_null_size CHECK (octet_length("null") <= 1024),
    CONSTRAINT task_remote_size CHECK (octet_length(remote) <= 8192),
    CONSTRAINT task_group_size CHECK (octet_length("group") <= 1024)
);
COMMENT ON TABLE pgjobs.task IS 'Asynchronous SQL tasks: INSERT INTO task (input) VALUES (''SELECT now()''); the agent runs each as its owner and writes output or error back';

-- The claim walks the ready rows of each (owner, group, remote) in claim order; the wake-up looks for the
-- next plan; the busy rows give each group's running count; the retention deletes ended rows.
CREATE INDEX task_ready ON pgjobs.task (owner, "group", (coalesce(remote, '')), priority DESC, max DESC, id) WHERE state = 'PLAN';
CREATE INDEX task_plan ON pgjobs.task (plan) WHERE state = 'PLAN';
CREATE INDEX task_owner_order ON pgjobs.task (owner, priority DESC, max DESC, id) WHERE state = 'PLAN';
CREATE INDEX task_owner_plan ON pgjobs.task (owner, plan) WHERE state = 'PLAN';
CREATE INDEX task_expires ON pgjobs.task (expires) WHERE state = 'PLAN' AND expires IS NOT NULL;

-- pgj_task_expires_ is when a task in state expires, by its plan, active, repeat and max.
CREATE FUNCTION pgjobs.pgj_task_expires_(p_state pgjobs.task_state, p_plan timestamptz, p_active interval, p_repeat interval, p_max int)
RETURNS timestamptz
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN p_state <> 'PLAN' OR p_repeat <> interval '0' OR p_max < 0 THEN NULL
                -- out of the table's bounds: its CHECKs refuse the row, this must not fail first
                WHEN NOT isfinite(p_plan) OR p_plan >= timestamptz '100000-01-01 00:00:00+00' OR NOT pgjobs.pgj_task_interval_ok_(p_active, 36525) THEN NULL
                ELSE p_plan + p_active END
$$;
CREATE INDEX task_busy ON pgjobs.task (owner, "group", (coalesce(remote, ''))) WHERE state IN ('TAKE', 'WORK');
CREATE INDEX task_ended ON pgjobs.task (stop) WHERE state IN ('DONE', 'FAIL', 'GONE');

-- pgj_task_agent_ tells whether the calling code may act as the agent: it may update the leader
-- lease (superusers and roles a DBA granted it to), as the agents' roles must.
CREATE FUNCTION pgjobs.pgj_task_agent_() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT has_table_privilege(current_user, 'pgjobs.pgj_leader_', 'UPDATE') $$;

-- pgj_task_agent_writes_ tells whether the statement writing a task is the agent's: a role that may
-- act as the agent, that marked its transaction's writes as the agent's (pgj_task_lead_ does).
CREATE FUNCTION pgjobs.pgj_task_agent_writes_() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$ SELECT coalesce(current_setting('pgjobs.task_writer', true) = 'agent', false) AND pgjobs.pgj_task_agent_() $$;

-- On INSERT: the owner is the inserting role, and a new row waits (PLAN) or is parked (STOP).
CREATE FUNCTION pgjobs.pgj_task_insert_() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.expires := pgjobs.pgj_task_expires_(NEW.state, NEW.plan, NEW.active, NEW.repeat, NEW.max);
    IF pgjobs.pgj_task_agent_writes_() THEN
        RETURN NEW; -- the agent's repeat copy keeps its owner
    END IF;
    IF NEW.owner IS DISTINCT FROM pgjobs.pgj_task_role_() THEN
        RAISE EXCEPTION 'task: owner % is not the inserting role %: a task always runs as the role that inserts it', NEW.owner, current_user
            USING ERRCODE = 'insufficient_privilege', HINT = 'leave owner out of the INSERT';
    END IF;
    IF NEW.state NOT IN ('PLAN', 'STOP') THEN
        RAISE EXCEPTION 'task: a new task is PLAN or STOP, not %', NEW.state
            USING ERRCODE = 'check_violation';
    END IF;
    IF NEW.attempt <> 0 OR NEW.pid IS NOT NULL OR NEW.start IS NOT NULL OR NEW.stop IS NOT NULL THEN
        RAISE EXCEPTION 'task: attempt, pid, start and stop are the agent''s to write'
            USING ERRCODE = 'insufficient_privilege', HINT = 'leave them out of the INSERT';
    END IF;
    NEW.origin := NEW.plan;
    RETURN NEW;
END
$$;
CREATE TRIGGER task_insert BEFORE INSERT ON pgjobs.task FOR EACH ROW EXECUTE FUNCTION pgjobs.pgj_task_insert_();

-- On UPDATE by a role other than the agent: a row in TAKE or WORK is the agent's until it ends;
-- the owner never changes; the state changes only PLAN <-> STOP, or DONE/FAIL/GONE -> PLAN.
CREATE FUNCTION pgjobs.pgj_task_update_() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    NEW.expires := pgjobs.pgj_task_expires_(NEW.state, NEW.plan, NEW.active, NEW.repeat, NEW.max);
    IF pgjobs.pgj_task_agent_writes_() THEN
        RETURN NEW;
    END IF;
    IF OLD.state IN ('TAKE', 'WORK') THEN
        RAISE EXCEPTION 'task %: it is %, the agent''s until it ends: it cannot be changed now', OLD.id, OLD.state
            USING ERRCODE = 'object_in_use', HINT = 'wait until it is DONE, FAIL or GONE; a timeout ends a run that is too long';
    END IF;
    IF NEW.owner IS DISTINCT FROM OLD.owner THEN
        RAISE EXCEPTION 'task %: the owner (%) cannot be changed', OLD.id, OLD.owner
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF (NEW.attempt, NEW.pid, NEW.start, NEW.stop) IS DISTINCT FROM (OLD.attempt, OLD.pid, OLD.start, OLD.stop) THEN
        RAISE EXCEPTION 'task %: attempt, pid, start and stop are the agent''s to write', OLD.id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.plan IS DISTINCT FROM OLD.plan OR NEW.origin IS DISTINCT FROM OLD.origin THEN
        NEW.origin := NEW.plan; -- planned anew: the grid of a repeat starts there
    END IF;
    IF NEW.state IS DISTINCT FROM OLD.state AND NOT (
        (OLD.state = 'PLAN' AND NEW.state = 'STOP') OR (OLD.state = 'STOP' AND NEW.state = 'PLAN')
        OR (OLD.state IN ('DONE', 'FAIL', 'GONE') AND NEW.state = 'PLAN')) THEN
        RAISE EXCEPTION 'task %: the state cannot change from % to %', OLD.id, OLD.state, NEW.state
            USING ERRCODE = 'check_violation',
                  HINT = 'a task goes from PLAN to STOP (park it), from STOP to PLAN (release it), or from DONE, FAIL or GONE to PLAN (run it again)';
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER task_update BEFORE UPDATE ON pgjobs.task FOR EACH ROW EXECUTE FUNCTION pgjobs.pgj_task_update_();

-- On DELETE by a role other than the agent: a row in TAKE or WORK is the agent's until it ends
-- (deleting it would free its group's place while its run goes on).
CREATE FUNCTION pgjobs.pgj_task_delete_() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF OLD.state IN ('TAKE', 'WORK') AND NOT pgjobs.pgj_task_agent_writes_() THEN
        RAISE EXCEPTION 'task %: it is %, the agent''s until it ends: it cannot be deleted now', OLD.id, OLD.state
            USING ERRCODE = 'object_in_use', HINT = 'wait until it is DONE, FAIL or GONE; a timeout ends a run that is too long';
    END IF;
    RETURN OLD;
END
$$;
CREATE TRIGGER task_delete BEFORE DELETE ON pgjobs.task FOR EACH ROW EXECUTE FUNCTION pgjobs.pgj_task_delete_();

-- One notification per transaction that adds a task or changes a plan or state: PostgreSQL folds
-- identical notifications of one transaction into one. The agent listens on pgjobs_task; its own
-- claims and results do not wake it.
CREATE FUNCTION pgjobs.pgj_task_notify_() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    IF NOT pgjobs.pgj_task_agent_writes_() THEN
        PERFORM pg_notify('pgjobs_task', '');
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER task_notify_insert AFTER INSERT ON pgjobs.task
    FOR EACH STATEMENT EXECUTE FUNCTION pgjobs.pgj_task_notify_();
CREATE TRIGGER task_notify_update AFTER UPDATE OF plan, state ON pgjobs.task
    FOR EACH STATEMENT EXECUTE FUNCTION pgjobs.pgj_task_notify_();

-- Row-level security: a role sees and changes its own tasks only; superusers (and the table's
-- owner, the role that enabled pgjobs) see all.
ALTER TABLE pgjobs.task ENABLE ROW LEVEL SECURITY;
CREATE POLICY task_own ON pgjobs.task
    USING (owner = (SELECT pgjobs.pgj_task_role_())) WITH CHECK (owner = (SELECT pgjobs.pgj_task_role_()));
-- The agents' roles (they may update the lease) see and change every task.
CREATE POLICY task_agent ON pgjobs.task
    USING ((SELECT pgjobs.pgj_task_agent_())) WITH CHECK ((SELECT pgjobs.pgj_task_agent_()));

-- Every column but id: a row's id is never chosen by a role (OVERRIDING SYSTEM VALUE would let one
-- take the ids the sequence hands out next, and fail everyone's inserts). No DELETE and no
-- table-level UPDATE: either would let a role LOCK the table in SHARE mode or stronger, holding every
-- role's inserts and the agent; ended tasks go after task_retention, and those that produced
-- nothing at once (delete).
REVOKE ALL ON pgjobs.task FROM PUBLIC;
GRANT SELECT ON pgjobs.task TO PUBLIC;
GRANT INSERT (parent, plan, start, stop, active, live, repeat, timeout, count, max, pid, state, delete, drift, header,
              string, delimiter, escape, quote, "null", save, data, "group", input, remote, owner,
              priority, attempt, retries, retry_delay, origin, expires),
      UPDATE (parent, plan, start, stop, active, live, repeat, timeout, count, max, pid, state, delete, drift, header,
              string, delimiter, escape, quote, "null", save, data, "group", input, remote, owner,
              priority, attempt, retries, retry_delay, origin, expires)
    ON pgjobs.task TO PUBLIC;
GRANT USAGE ON TYPE pgjobs.task_state TO PUBLIC;
GRANT EXECUTE ON FUNCTION pgjobs.pgj_task_default_(text, anyelement), pgjobs.pgj_task_role_(), pgjobs.pgj_task_agent_(),
    pgjobs.pgj_task_agent_writes_(),
    pgjobs.pgj_task_interval_ok_(interval, int),
    pgjobs.pgj_task_expires_(pgjobs.task_state, timestamptz, interval, interval, int) TO PUBLIC;

-- task_retention: how long the agent keeps ended tasks (DONE, FAIL, GONE), counted from their stop.
INSERT INTO pgjobs.pgj_setting_ (name, value) VALUES ('task_retention', '7 days');

CREATE OR REPLACE VIEW pgjobs.pgj_settings AS
SELECT s.name, s.value,
       CASE s.name
           WHEN 'run_retention' THEN 'how long the agent keeps the run history (an interval)'
           WHEN 'late_limit' THEN 'how late an agent still runs a fire that fell due while no agent could run it; an older one is recorded as missed (an interval)'
           WHEN 'task_retention' THEN 'how long the agent keeps ended tasks (DONE, FAIL, GONE), from their stop (an interval)'
       END AS description
FROM pgjobs.pgj_setting_ s;

-- pgj_setting_set_ knows task_retention.
CREATE OR REPLACE FUNCTION pgjobs.pgj_setting_set_(p_name text, p_value text) RETURNS void
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
    WHEN 'task_retention' THEN lo := interval '1 minute'; hi := interval '100 years'; range := '1 minute .. 100 years'; example := '7 days';
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
