-- Marks abandoned the runs still "running" whose agent's leader session is gone (the agent died).
-- A session counts as the same one only if it started before the run: a reused pid does not.
UPDATE pgjobs.pgj_run_ r
SET runstatus = 'abandoned', runfinished = clock_timestamp(),
    runmessage = 'the agent that ran it (' || coalesce(r.runagent, '?') || ') stopped before the run finished'
WHERE r.runstatus = 'running'
  AND r.runsession IS DISTINCT FROM pg_backend_pid()
  AND NOT EXISTS (SELECT FROM pg_stat_activity a
                  WHERE a.pid = r.runsession AND a.backend_start <= r.runstarted)
RETURNING r.runjobname
