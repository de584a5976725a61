-- Sent on a run's session in the same round trip as the call, and run before it: the session must
-- be of the job's owner, role OID $1 (named $2), which must still exist, log in and be valid; and
-- every function named $5 in schema $4 (the stored call's), and every type of that name when the
-- call has one positional argument ($6), must be of that role, of the owner of function $3 (the
-- one the call was set to) or of a superuser.
SELECT pgjobs.pgj_run_check_($1, $2, $3, $4, $5, $6)
