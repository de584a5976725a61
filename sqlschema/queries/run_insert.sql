-- Records a run that ended before its "running" row was written: job $1, name $2, owner $3, fire
-- time $4 (NULL for a startup run), agent $5, leader session $6, started $7, finished $8, status $9,
-- SQLSTATE $10, message $11; and the job's last run.
WITH run AS (
    INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runscheduled, runagent, runsession,
                                 runstarted, runfinished, runstatus, runsqlstate, runmessage)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    RETURNING runjobid, runstarted, runstatus
)
UPDATE pgjobs.pgj_job_ j SET joblastrun = run.runstarted, joblaststatus = run.runstatus
FROM run WHERE j.jobid = run.runjobid
