-- Sets aside those of views $1 (found orphaned a while before) that no job uses now, within $2 ms;
-- when $3 (the round's last statement, $1 empty), drops what earlier statements set aside once no
-- transaction open when they were set aside remains, and the empty call schemas. Returns how many
-- it set aside and dropped, how many views and tables it left because another session held them
-- or something hangs on them, for the time budget, and for transactions still open, and whose try
-- failed.
SELECT aside, dropped, held, deferred, waiting, failed FROM pgjobs.pgj_call_sweep_($1::text[], $2::float8 * interval '1 ms', p_tidy => $3::boolean)
