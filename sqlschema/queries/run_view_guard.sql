-- Sent on a run's session in the same round trip as the call bound to view $3, and run before it:
-- the session must be of the job's owner, role OID $1 (named $2), which must still exist, log in
-- and be valid; the view must be the owner's, in the owner's own call schema.
SELECT pgjobs.pgj_run_view_check_($1, $2, $3)
