-- Marks abandoned the runs still "running" whose own session is gone (the agent running them died,
-- or lost its session). A session counts only with the same backend_start, so a reused pid does
-- not keep a run alive; a session whose backend_start this role may not see counts as alive.
UPDATE pgjobs.pgj_run_ r
SET runstatus = 'abandoned', runfinished = clock_timestamp(),
    runmessage = 'the session that ran it (of ' || coalesce(r.runagent, '?') || ') ended before the run was recorded as finished'
WHERE r.runstatus = 'running'
  AND NOT EXISTS (SELECT FROM pg_stat_activity a
                  WHERE a.pid = r.runsession
                    AND (a.backend_start IS NULL OR a.backend_start = r.runsessionstart))
RETURNING r.runjobname
