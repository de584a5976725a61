-- Records that a run goes on: job $1, name $2, owner $3 (role OID $9), fire time $4 (NULL for a
-- startup run), agent $5, the run's session $6 and its backend_start $7, started $8, the request of
-- a run started by hand $10 (NULL otherwise).
INSERT INTO pgjobs.pgj_run_ (runjobid, runjobname, runowner, runscheduled, runagent, runsession, runsessionstart, runstarted, runstatus, runownerid, runrequest)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9, $10)
RETURNING runid
