-- The leader session's backend pid, whether the server is a standby in recovery, and how many
-- sessions the server accepts from roles without superuser or pg_use_reserved_connections (the
-- latter from PostgreSQL 16).
SELECT pg_backend_pid(), pg_is_in_recovery(),
       current_setting('max_connections')::int
       - current_setting('superuser_reserved_connections')::int
       - coalesce(current_setting('reserved_connections', true)::int, 0)
