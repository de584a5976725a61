-- Records a run that ended before its "running" row was written: job $1, name $2, owner $3 (role
-- OID $13), fire time $4 (NULL for a startup run), agent $5, the run's session $6 and its
-- backend_start $7, started $8, finished $9, status $10, SQLSTATE $11, message $12, detail $14, hint $15, context $16,
-- the request of a run started by hand $17 (NULL otherwise); and the job's
-- last run. No foreign key: a job that dropped itself while it ran still gets its run recorded.
WITH run AS (
    INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runscheduled, runagent, runsession, runsessionstart,
                                 runstarted, runfinished, runstatus, runsqlstate, runmessage, runownerid,
                                 rundetail, runhint, runcontext, runrequest)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
    RETURNING runjobid, runstarted, runstatus
)
INSERT INTO pgjobs.pgj_fire_ AS f (firejobid, firelastrun, firelaststatus)
SELECT runjobid, runstarted, runstatus FROM run WHERE EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobid = run.runjobid)
ON CONFLICT (firejobid) DO UPDATE SET firelastrun = EXCLUDED.firelastrun, firelaststatus = EXCLUDED.firelaststatus
