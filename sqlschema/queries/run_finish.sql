-- Records how run $1 ended: at $2 with status $3, SQLSTATE $4, message $5, detail $6, hint $7 and
-- context $8; and the job's last run. Returns nothing when another agent has marked the run abandoned meanwhile.
WITH run AS (
    UPDATE pgjobs.pgj_run_ SET runfinished = $2, runstatus = $3, runsqlstate = $4, runmessage = $5,
        rundetail = $6, runhint = $7, runcontext = $8
    WHERE runid = $1 AND runstatus = 'running'
    RETURNING runjobid, runstarted, runstatus
), job AS (
    INSERT INTO pgjobs.pgj_fire_ AS f (firejobid, firelastrun, firelaststatus)
    SELECT runjobid, runstarted, runstatus FROM run WHERE EXISTS (SELECT FROM pgjobs.pgj_job_ j WHERE j.jobid = run.runjobid)
    ON CONFLICT (firejobid) DO UPDATE SET firelastrun = EXCLUDED.firelastrun, firelaststatus = EXCLUDED.firelaststatus
)
SELECT count(*) FROM run
