-- The backend pid and backend_start of this session, which identify it while it lives.
SELECT pid, backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid()
