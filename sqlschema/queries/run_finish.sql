-- Records how run $1 ended: at $2 with status $3, SQLSTATE $4 and message $5; and the job's last run.
-- A run that another agent has marked abandoned meanwhile stays so.
WITH run AS (
    UPDATE pgjobs.pgj_run_ SET runfinished = $2, runstatus = $3, runsqlstate = $4, runmessage = $5
    WHERE runid = $1 AND runstatus = 'running'
    RETURNING runjobid, runstarted, runstatus
)
UPDATE pgjobs.pgj_job_ j SET joblastrun = run.runstarted, joblaststatus = run.runstatus
FROM run WHERE j.jobid = run.runjobid
