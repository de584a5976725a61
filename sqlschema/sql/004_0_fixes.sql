-- pgjobs schema version 4, part 0: fixes found by the attacker review of version 3.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_day_in_ reads year 0000 as the Go scheduler does (astronomical year 0, 1 BC), instead of
-- failing in make_date: one role's schedule 'D 0000.01.01 00:00' made pgj_jobs fail for whoever
-- sees that role's jobs (a superuser) while no agent led.
CREATE OR REPLACE FUNCTION pgjobs.pgj_day_in_(p_year int, p_month int, p_dom int) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN d BETWEEN 1 AND last THEN make_date(y, p_month, d) END
    FROM (SELECT CASE WHEN p_year <= 0 THEN p_year - 1 ELSE p_year END AS y) yy,
         LATERAL (SELECT extract(day FROM make_date(yy.y, p_month, 1) + interval '1 month' - interval '1 day')::int AS last) m,
         LATERAL (SELECT CASE WHEN p_dom < 0 THEN m.last + 1 + p_dom ELSE p_dom END AS d) x
$$;
