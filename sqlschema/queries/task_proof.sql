-- Appended to a task's input as the agent sends it, after a line break and a semicolon that end
-- whatever the input left open (a line comment, a statement without its semicolon): the proof that
-- the attempt ran, in the input's transaction, with the epoch, task id, attempt and token written
-- in. Only the lines that are not comments are sent.
SELECT pgjobs.pgj_task_proof_(%d, %d, %d, '%s')
