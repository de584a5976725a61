-- Records that a run goes on: job $1, name $2, owner $3, fire time $4 (NULL for a startup run),
-- agent $5, leader session $6, started $7.
INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runscheduled, runstarted, runstatus, runagent, runsession)
VALUES ($1, $2, $3, $4, $7, 'running', $5, $6)
RETURNING runid
