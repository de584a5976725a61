-- Whether the database has a pgjobs schema with its version table.
SELECT to_regclass('pgjobs.pgj_version_') IS NOT NULL
