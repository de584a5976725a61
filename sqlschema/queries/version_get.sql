-- The installed pgjobs schema version.
SELECT version FROM pgjobs.pgj_version_
