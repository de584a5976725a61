-- How many runs of agents other than $1 are recorded as running.
SELECT count(*) FROM pgjobs.pgj_run_ WHERE runstatus = 'running' AND runagent IS DISTINCT FROM $1
