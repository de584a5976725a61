-- Records a fire that did not run: job $1, name $2, owner $3 (role OID $8), fire time $4, status $5
-- (skipped or missed), message $6, agent $7.
INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runscheduled, runstatus, runmessage, runagent, runfinished, runownerid)
VALUES ($1, $2, $3, $4, $5, $6, $7, clock_timestamp(), $8)
