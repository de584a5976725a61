-- The leader session's backend pid and whether the server is a standby in recovery.
SELECT pg_backend_pid(), pg_is_in_recovery()
