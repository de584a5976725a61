-- pgjobs schema version 1, part 0: the schema, its version, the settings and the caller's identity.
-- Applied by sqlschema.Install inside one transaction, with every other 001_* file.

CREATE SCHEMA pgjobs;
COMMENT ON SCHEMA pgjobs IS 'pgjobs: scheduled jobs (pgj_* functions and views); managed by the pgjobs tool';
REVOKE ALL ON SCHEMA pgjobs FROM PUBLIC;
GRANT USAGE ON SCHEMA pgjobs TO PUBLIC;

-- The installed version; one row.
CREATE TABLE pgjobs.pgj_version_ (
    singleton            boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    version              int NOT NULL,
    installed            timestamptz NOT NULL DEFAULT now(),
    upgraded             timestamptz,
    previous_search_path text -- the database's search_path setting before enabledb; NULL: none
);

-- Settings of this database's pgjobs; the agent reads them.
CREATE TABLE pgjobs.pgj_setting_ (
    name  text PRIMARY KEY,
    value text NOT NULL
);
INSERT INTO pgjobs.pgj_setting_ (name, value) VALUES
    ('run_retention', '30 days'); -- how long the agent keeps pgj_run_ rows (an interval)

-- pgj_caller_ is the role that called a pgj_* function: the role set with SET ROLE, else the session
-- user. Inside the SECURITY DEFINER API functions current_user is the functions' owner, but the
-- role setting still tells who is calling.
CREATE FUNCTION pgjobs.pgj_caller_() RETURNS name
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE current_setting('role') WHEN 'none' THEN session_user ELSE current_setting('role')::name END
$$;

-- pgj_visible_ tells whether the caller may see and change an object owned by p_owner: its own, or
-- any when the caller is a superuser.
CREATE FUNCTION pgjobs.pgj_visible_(p_owner name) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT p_owner = pgjobs.pgj_caller_()
        OR coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = pgjobs.pgj_caller_()), false)
$$;

-- pgj_install_finish_ records the version and makes the schema visible through the database's
-- search_path, remembering the previous setting for pgj_uninstall_prepare_.
CREATE FUNCTION pgjobs.pgj_install_finish_(p_version int) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous text;
BEGIN
    SELECT substr(setting, length('search_path=') + 1) INTO previous
    FROM pg_db_role_setting d, unnest(d.setconfig) AS setting
    WHERE d.setdatabase = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND d.setrole = 0 AND setting LIKE 'search_path=%';
    INSERT INTO pgjobs.pgj_version_ (version, previous_search_path) VALUES (p_version, previous);
    EXECUTE format('ALTER DATABASE %I SET search_path TO %s', current_database(),
                   coalesce(previous, '"$user", public') || ', pgjobs');
END
$$;

-- pgj_uninstall_prepare_ gives the database back the search_path setting it had before enabledb.
CREATE FUNCTION pgjobs.pgj_uninstall_prepare_() RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    previous text;
BEGIN
    SELECT previous_search_path INTO previous FROM pgjobs.pgj_version_;
    IF previous IS NULL THEN
        EXECUTE format('ALTER DATABASE %I RESET search_path', current_database());
    ELSE
        EXECUTE format('ALTER DATABASE %I SET search_path TO %s', current_database(), previous);
    END IF;
END
$$;
REVOKE ALL ON FUNCTION pgjobs.pgj_install_finish_(int), pgjobs.pgj_uninstall_prepare_() FROM PUBLIC;
