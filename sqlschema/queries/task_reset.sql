-- Puts back to PLAN the tasks left claimed or running by an agent that died or lost the lead: not
-- those of the runs $2 of the agent of leader epoch $1. Returns how many, and how many such tasks
-- still run on a live session.
SELECT reset, running FROM pgjobs.pgj_task_reset_($1, $2)
