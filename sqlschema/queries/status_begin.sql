-- pgjobs status reads a database in one read-only snapshot, so that its counts and ages agree, with
-- pg_catalog first: a role's functions or operators in the caller's search_path are never called.
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;
SET LOCAL search_path = pg_catalog, pg_temp
