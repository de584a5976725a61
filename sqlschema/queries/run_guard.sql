-- Sent on a run's session in the same round trip as the call, and run before it: the session must
-- be of the job's owner, role OID $1 (named $2), which must still exist, log in and be valid.
SELECT pgjobs.pgj_run_check_($1, $2)
