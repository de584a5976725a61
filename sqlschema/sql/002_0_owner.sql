-- pgjobs schema version 2, part 0: owners are roles (OIDs) taken from current_user, and the agent's
-- tables no longer reference the users' ones, so that no user transaction can block the agent.
--
-- Version 1 took the owner from the role setting or the session user: inside a SECURITY DEFINER
-- function of alice called by a superuser that was the superuser, so alice could make the agent run
-- her code as the superuser. The owner is now the role whose privileges the calling code has, as
-- pg_cron records it (GetUserId()): current_user as the caller sees it. A SECURITY DEFINER function
-- cannot see its caller's current_user, so the public pgj_* functions are SECURITY INVOKER and,
-- right before they call the definer function that writes, stamp the caller: they insert a row
-- into pgj_caller_, whose trigger (running as the caller) records current_user. The definer
-- function takes that stamp (pgj_caller_take_); it trusts no argument saying who calls.

-- The upgrade runs in the session of whoever upgrades, usually a superuser, with that session's
-- search_path: every statement of version 2 runs with pg_catalog only, so that no function or
-- operator a role created in a schema of that path is called instead of the built-in one.
SET LOCAL search_path = pg_catalog, pg_temp;

-- The caller stamps: one row per pending call, of this backend and transaction. PUBLIC may only
-- insert, which allows no lock that conflicts with another role's insert or with the agent.
CREATE TABLE pgjobs.pgj_caller_ (
    stampid   bigint GENERATED ALWAYS AS IDENTITY, -- not unique: a role could plant ids others then wait for
    stamprole oid NOT NULL,             -- current_user of the inserting code
    stamppid  int NOT NULL,             -- its backend
    stampxact xid8 NOT NULL,            -- and top-level transaction
    stamped   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ON pgjobs.pgj_caller_ (stamppid);
REVOKE ALL ON pgjobs.pgj_caller_ FROM PUBLIC;
GRANT INSERT ON pgjobs.pgj_caller_ TO PUBLIC;

-- pgj_caller_clear_ removes the stamps of this backend: a new stamp replaces them, so that the
-- stamp a definer function takes is always the one stamped last, never one a role planted before
-- (whatever stampid it gave it with OVERRIDING SYSTEM VALUE).
CREATE FUNCTION pgjobs.pgj_caller_clear_() RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, pg_temp
AS $$
    DELETE FROM pgjobs.pgj_caller_ WHERE stamppid = pg_backend_pid()
$$;

-- pgj_caller_stamp_ fills a stamp with the inserting role, backend and transaction, whatever the
-- INSERT said, and removes the backend's older stamps. It is not SECURITY DEFINER: current_user is
-- the role of the code that inserts.
CREATE FUNCTION pgjobs.pgj_caller_stamp_() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    PERFORM pgjobs.pgj_caller_clear_();
    NEW.stamprole := (SELECT oid FROM pg_roles WHERE rolname = current_user);
    NEW.stamppid := pg_backend_pid();
    NEW.stampxact := pg_current_xact_id();
    NEW.stamped := now();
    RETURN NEW;
END
$$;
CREATE TRIGGER pgj_caller_stamp BEFORE INSERT OR UPDATE ON pgjobs.pgj_caller_
    FOR EACH ROW EXECUTE FUNCTION pgjobs.pgj_caller_stamp_();

-- pgj_stamp_ stamps the calling code's role; the public pgj_* functions call it right before the
-- definer function that writes.
CREATE FUNCTION pgjobs.pgj_stamp_() RETURNS void
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $$
    INSERT INTO pgjobs.pgj_caller_ DEFAULT VALUES
$$;

-- pgj_caller_take_ returns the role that stamped last in this backend and transaction, and
-- removes the stamps of this backend. Only the definer functions can (PUBLIC may not delete).
CREATE FUNCTION pgjobs.pgj_caller_take_(p_function text) RETURNS oid
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    caller oid;
BEGIN
    WITH taken AS (
        DELETE FROM pgjobs.pgj_caller_ WHERE stamppid = pg_backend_pid()
        RETURNING stampid, stamprole, stampxact
    )
    SELECT stamprole INTO caller FROM taken WHERE stampxact = pg_current_xact_id()
    ORDER BY stampid DESC LIMIT 1;
    IF caller IS NULL THEN
        RAISE EXCEPTION '%: call the public pgj_* function, not the internal one', p_function
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN caller;
END
$$;

-- pgj_role_ is the OID of a role name, NULL when there is none.
CREATE FUNCTION pgjobs.pgj_role_(p_name name) RETURNS oid
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT oid FROM pg_roles WHERE rolname = p_name
$$;

-- pgj_visible_ tells whether role p_viewer may see and change an object of role p_owner: its own,
-- or any when p_viewer is a superuser. Both are OIDs: a role dropped and created again under the
-- same name is another role.
DROP VIEW pgjobs.pgj_schedules, pgjobs.pgj_jobs, pgjobs.pgj_runs;
DROP FUNCTION pgjobs.pgj_visible_(name);
CREATE FUNCTION pgjobs.pgj_visible_(p_owner oid, p_viewer oid) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p_owner = p_viewer OR coalesce((SELECT rolsuper FROM pg_roles WHERE oid = p_viewer), false)
$$;

-- Owners by OID. The name columns stay: the owner's name when the object was made, shown when the
-- role is gone. An owner whose role no longer exists keeps a NULL-free OID that matches no role.
ALTER TABLE pgjobs.pgj_schedule_ ADD COLUMN schownerid oid;
ALTER TABLE pgjobs.pgj_job_ ADD COLUMN jobownerid oid;
ALTER TABLE pgjobs.pgj_run_ ADD COLUMN runownerid oid;
UPDATE pgjobs.pgj_schedule_ SET schownerid = coalesce(pgjobs.pgj_role_(schowner), 0);
UPDATE pgjobs.pgj_job_ SET jobownerid = coalesce(pgjobs.pgj_role_(jobowner), 0);
UPDATE pgjobs.pgj_run_ SET runownerid = coalesce(pgjobs.pgj_role_(runowner), 0);
ALTER TABLE pgjobs.pgj_schedule_ ALTER COLUMN schownerid SET NOT NULL;
ALTER TABLE pgjobs.pgj_job_ ALTER COLUMN jobownerid SET NOT NULL;
ALTER TABLE pgjobs.pgj_run_ ALTER COLUMN runownerid SET NOT NULL;
CREATE INDEX ON pgjobs.pgj_run_ (runownerid, runfinished);

-- The function a job's call resolved to when it was created or changed; NULL for a call stored by
-- version 1 that could not be resolved again: the agent does not run it (see pgj_call_resolve_).
ALTER TABLE pgjobs.pgj_job_ ADD COLUMN jobfuncoid oid;

-- No foreign key from the agent's tables to pgj_job_: a role's open transaction that changes or
-- drops its job locks the job's row, and a foreign key check of the agent's run or fire rows would
-- wait for it. Runs keep the job's id, name and owner; fire rows of dropped jobs are deleted by the
-- agent (run_prune.sql).
ALTER TABLE pgjobs.pgj_run_ DROP CONSTRAINT pgj_run__runjobid_fkey;
ALTER TABLE pgjobs.pgj_fire_ DROP CONSTRAINT pgj_fire__firejobid_fkey;

-- v1's caller function: replaced by the stamps.
DROP FUNCTION pgjobs.pgj_caller_();
