-- Job $1 as the caller may see it, for pgjobs next: read through pgj_jobs and pgj_schedules, which
-- every role may read and which show a role its own jobs only (a superuser's show all). One row:
-- the database, whether the caller may read the zone the active agent recorded in pgj_leader_,
-- whether it sees the job, and the job's columns (NULL when it does not): name, call, owner,
-- startup, created, next_run (the agent's plan, or the view's as an agent starting now would plan
-- it; NULL when paused or never again), the start schedule's name and definition, the
-- recurrences' definitions, paused and the time limit.
SELECT pg_catalog.current_database()::text,
       pg_catalog.has_column_privilege('pgjobs.pgj_leader_', 'zone', 'SELECT'),
       j.name IS NOT NULL,
       j.name, j.function, j.owner, j.startup, j.created, j.next_run,
       j.start_schedule, s.schedule, j.definitions, j.paused, j.timeout
FROM (SELECT) AS one
LEFT JOIN pgjobs.pgj_jobs j ON j.name = $1
LEFT JOIN pgjobs.pgj_schedules s ON s.name = j.start_schedule
