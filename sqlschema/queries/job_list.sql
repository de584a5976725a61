-- The jobs the caller may see, with their schedules and runs, for pgjobs jobs.
SELECT name, function, owner, startup, start_schedule,
       ARRAY(SELECT s || ' (' || d || ')' FROM unnest(schedules, definitions) AS u(s, d)) AS recurrences,
       next_run, last_run, last_status, paused, timeout
FROM pgjobs.pgj_jobs
ORDER BY name
