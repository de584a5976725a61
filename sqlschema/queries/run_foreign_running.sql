-- The jobs of the runs of agents other than $1 recorded as running.
SELECT DISTINCT runjobid FROM pgjobs.pgj_run_
WHERE runstatus = 'running' AND runagent IS DISTINCT FROM $1 AND runjobid IS NOT NULL
