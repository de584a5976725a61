-- Every job with what the agent needs to plan it: its start schedule and recurrences as canonical
-- texts, the fire planned before, the latest fire claimed and whether it has a run row.
SELECT j.jobid, j.jobname, j.jobfunction, j.jobowner, j.jobisstartup, j.jobstartset, f.firenext,
       st.schtext,
       ARRAY(SELECT s.schtext FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
             WHERE js.jsjobid = j.jobid ORDER BY s.schid),
       f.firelast,
       EXISTS (SELECT FROM pgjobs.pgj_run_ r WHERE r.runjobid = j.jobid AND r.runscheduled = f.firelast)
FROM pgjobs.pgj_job_ j
LEFT JOIN pgjobs.pgj_schedule_ st ON st.schid = j.jobstartschid
LEFT JOIN pgjobs.pgj_fire_ f ON f.firejobid = j.jobid
ORDER BY j.jobid
