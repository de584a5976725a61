-- The upgrade's transaction: read-write, without time limits, and names in pg_catalog first
-- (each version sets its own search_path too), whatever the database's or the role's settings.
SET LOCAL transaction_read_only = off;
SET LOCAL statement_timeout = 0;
SET LOCAL lock_timeout = 0;
SET LOCAL idle_in_transaction_session_timeout = 0;
SET LOCAL search_path = pg_catalog, pg_temp
