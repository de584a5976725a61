-- Every job that is not paused, with what the agent needs to plan and run it: its owner's role OID, the role's name
-- now (NULL when the role was dropped), the function its call was resolved to (0 for a version 1
-- call that could not be resolved again: it does not run), its start schedule and recurrences as canonical texts, the
-- fire planned before, the latest fire claimed and whether it has a run row, its time limit, and
-- when it was last resumed, the row's version (xmin: a request runs the job only as loaded), and
-- the view its call is bound to ('' for a call set before schema version 15).
SELECT j.jobid, j.jobname, j.jobfunction, j.jobownerid, r.rolname, j.jobowner, coalesce(j.jobfuncoid, 0),
       j.jobisstartup, j.jobstartset, f.firenext,
       st.schtext,
       ARRAY(SELECT s.schtext FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
             WHERE js.jsjobid = j.jobid ORDER BY s.schid),
       f.firelast,
       EXISTS (SELECT FROM pgjobs.pgj_run_ r WHERE r.runjobid = j.jobid AND r.runscheduled = f.firelast),
       j.jobtimeout, j.jobresumed, j.xmin::text, coalesce(j.jobview, '')
FROM pgjobs.pgj_job_ j
LEFT JOIN pg_catalog.pg_roles r ON r.oid = j.jobownerid
LEFT JOIN pgjobs.pgj_schedule_ st ON st.schid = j.jobstartschid
LEFT JOIN pgjobs.pgj_fire_ f ON f.firejobid = j.jobid
WHERE NOT j.jobpaused
ORDER BY j.jobid
