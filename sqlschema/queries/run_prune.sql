-- Deletes the runs that ended longer ago than the run_retention setting.
DELETE FROM pgjobs.pgj_run_
WHERE runfinished < now() - coalesce((SELECT value::interval FROM pgjobs.pgj_setting_ WHERE name = 'run_retention'), '30 days')
