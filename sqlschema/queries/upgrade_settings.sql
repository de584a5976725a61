-- The upgrade's transaction: read-write, without time limits, its warnings sent, strings and
-- plpgsql read as the versions are written, and names in pg_catalog first (each version sets its
-- own search_path too), whatever the database's or the role's settings.
SET LOCAL transaction_read_only = off;
SET LOCAL statement_timeout = 0;
SET LOCAL lock_timeout = 0;
SET LOCAL idle_in_transaction_session_timeout = 0;
SELECT pg_catalog.set_config('transaction_timeout', '0', true) -- PostgreSQL 17 and later
WHERE pg_catalog.current_setting('server_version_num')::int >= 170000;
SET LOCAL client_min_messages = warning;
SET LOCAL standard_conforming_strings = on;
SET LOCAL plpgsql.extra_errors = 'none';
SET LOCAL search_path = pg_catalog, pg_temp
