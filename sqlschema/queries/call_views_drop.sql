-- Drops those of views $1 (found orphaned a prune before) that no job uses now; a view in use is
-- left for the next prune. Returns how many it dropped.
SELECT pgjobs.pgj_call_views_drop_($1::text[])
