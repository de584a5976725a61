-- Every job with what the agent needs to plan it: its start schedule and recurrences as canonical
-- texts, and the latest fire it has a run row for.
SELECT j.jobid, j.jobname, j.jobfunction, j.jobowner, j.jobisstartup, j.jobstartset, j.jobnextrun,
       st.schtext,
       ARRAY(SELECT s.schtext FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
             WHERE js.jsjobid = j.jobid ORDER BY s.schid),
       (SELECT max(r.runscheduled) FROM pgjobs.pgj_run_ r WHERE r.runjobid = j.jobid)
FROM pgjobs.pgj_job_ j
LEFT JOIN pgjobs.pgj_schedule_ st ON st.schid = j.jobstartschid
ORDER BY j.jobid
