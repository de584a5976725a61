-- The tasks left claimed or running by an agent that died or lost the lead, not those of the runs
-- $2 of the agent of leader epoch $1, whose input committed its proof: they are ended, not run
-- again.
SELECT * FROM pgjobs.pgj_task_adopt_($1, $2)
