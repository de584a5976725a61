-- Asks the active agent to run the caller's job $1 now, and returns the request's id.
SELECT pgjobs.pgj_run_job($1)
