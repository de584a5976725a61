-- Drops those of views $1 (found orphaned a while before) that no job uses now, within $2 ms, and
-- when $3 (the round's last statement) the empty call schemas; a view in use is left for a later
-- sweep. Returns how many it dropped, and how many views and
-- tables it left because another session held them or something hangs on them, whose try failed,
-- and that it left for the time budget.
SELECT dropped, held, deferred, failed FROM pgjobs.pgj_call_views_sweep_($1::text[], $2::float8 * interval '1 ms', p_tidy => $3::boolean)
