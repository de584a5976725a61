-- pgjobs schema version 3, part 2: any role may read the schema version, so that the read-only
-- commands (pgjobs jobs) work for every role that may connect, showing what that role may see.
SET LOCAL search_path = pg_catalog, pg_temp;

GRANT SELECT ON pgjobs.pgj_version_ TO PUBLIC;
