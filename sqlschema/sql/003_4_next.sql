-- pgjobs schema version 3, part 4: pgj_jobs.next_run is never in the past. The agent records the
-- next fire it planned; when no agent has planned the job (none runs, or the plan has passed), the
-- view computes it from the job's schedules with pgj_next_fire_, which follows the Go scheduler
-- (schedule.Next) to the second: wall-clock times in the agent's zone, a time skipped by daylight
-- saving fires at the jump, a repeated one at its first occurrence, intervals in real time.
SET LOCAL search_path = pg_catalog, pg_temp;

-- The IANA zone the active agent reads schedules in (NULL: unknown; the database's TimeZone then).
ALTER TABLE pgjobs.pgj_leader_ ADD COLUMN zone text;

-- pgj_offset_ returns the UTC offset of zone p_zone at instant p_t, in seconds.
CREATE FUNCTION pgjobs.pgj_offset_(p_t bigint, p_zone text) RETURNS bigint
LANGUAGE sql STABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT extract(epoch FROM (to_timestamp(p_t) AT TIME ZONE p_zone) - (to_timestamp(p_t) AT TIME ZONE 'UTC'))::bigint
$$;

-- pgj_first_reaching_ returns the first instant (Unix seconds) at which the wall clock of p_zone
-- reads p_wall (seconds since 1970-01-01 on the local clock) or later.
CREATE FUNCTION pgjobs.pgj_first_reaching_(p_wall bigint, p_zone text) RETURNS bigint
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    -- Within 15 hours of the wall time read as UTC lie all the instants whose clock reads it, and
    -- at most one change of offset: the offsets at both ends are all there are.
    o1 bigint := pgj_offset_(p_wall - 15 * 3600, p_zone);
    o2 bigint := pgj_offset_(p_wall + 15 * 3600, p_zone);
    best bigint;
    lo bigint;
    hi bigint;
    mid bigint;
BEGIN
    IF pgj_offset_(p_wall - o1, p_zone) = o1 THEN
        best := p_wall - o1;
    END IF;
    IF pgj_offset_(p_wall - o2, p_zone) = o2 AND (best IS NULL OR p_wall - o2 < best) THEN
        best := p_wall - o2;
    END IF;
    IF best IS NOT NULL THEN
        RETURN best; -- the first occurrence of a repeated time too
    END IF;
    -- Skipped by a jump forward: the jump, the first instant whose clock reads p_wall or later.
    lo := p_wall - greatest(o1, o2);
    hi := p_wall - least(o1, o2);
    WHILE lo < hi LOOP
        mid := lo + (hi - lo) / 2;
        IF mid + pgj_offset_(mid, p_zone) >= p_wall THEN
            hi := mid;
        ELSE
            lo := mid + 1;
        END IF;
    END LOOP;
    RETURN lo;
END
$$;

-- pgj_next_at_minute_ returns the first whole second at or after p_lo (Unix seconds) at which the
-- wall clock of p_zone reads minute p_minute and second 0.
CREATE FUNCTION pgjobs.pgj_next_at_minute_(p_lo bigint, p_minute int, p_zone text) RETURNS bigint
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    t bigint := p_lo;
    o bigint;
    fire bigint;
    lo bigint;
    hi bigint;
    mid bigint;
BEGIN
    FOR i IN 1..16 LOOP
        o := pgj_offset_(t, p_zone);
        fire := t + (((p_minute * 60 - o - t) % 3600) + 3600) % 3600;
        IF pgj_offset_(fire, p_zone) = o THEN
            RETURN fire; -- no change of offset in between: none comes within an hour of another
        END IF;
        -- The offset changes before fire: start again at the change.
        lo := t + 1;
        hi := fire;
        WHILE lo < hi LOOP
            mid := lo + (hi - lo) / 2;
            IF pgj_offset_(mid, p_zone) <> o THEN
                hi := mid;
            ELSE
                lo := mid + 1;
            END IF;
        END LOOP;
        t := lo;
    END LOOP;
    RETURN t;
END
$$;

-- pgj_day_in_ returns day p_dom (1..31, or -1..-28 from the month's end) of a month, or NULL when
-- the month has no such day.
CREATE FUNCTION pgjobs.pgj_day_in_(p_year int, p_month int, p_dom int) RETURNS date
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE WHEN d BETWEEN 1 AND last THEN make_date(p_year, p_month, d) END
    FROM (SELECT extract(day FROM make_date(p_year, p_month, 1) + interval '1 month' - interval '1 day')::int AS last) m,
         LATERAL (SELECT CASE WHEN p_dom < 0 THEN m.last + 1 + p_dom ELSE p_dom END AS d) x
$$;

-- pgj_next_fire_ returns the first fire of schedule p_text strictly after p_after, reading wall
-- times in zone p_zone and counting intervals from p_anchor; NULL when it never fires again. It
-- follows schedule.Next of the Go scheduler, but for fires past PostgreSQL's last timestamp (an
-- interval of millions of days), which are NULL.
CREATE FUNCTION pgjobs.pgj_next_fire_(p_text text, p_after timestamptz, p_zone text, p_anchor timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    s record;
    after_sec bigint := floor(extract(epoch FROM p_after))::bigint;
    step bigint;
    diff numeric;
    k bigint;
    from_day date;
    day date;
    fire bigint;
    y int;
    m int;
BEGIN
    SELECT * INTO s FROM pgj_parse_schedule_(p_text, 'pgj_next_fire_');
    IF s.schtype = 'I' THEN
        step := coalesce(s.schday, 0)::bigint * 86400 + coalesce(s.schhour, 0) * 3600 + s.schminute * 60;
        diff := extract(epoch FROM p_after - p_anchor);
        k := CASE WHEN diff < step THEN 1 ELSE floor(diff / step)::bigint + 1 END;
        BEGIN
            RETURN p_anchor + make_interval(secs => k * step);
        EXCEPTION WHEN datetime_field_overflow THEN
            RETURN NULL; -- past PostgreSQL's last timestamp (294276 AD): never, as far as it can tell
        END;
    END IF;
    IF s.schhour IS NULL THEN -- 'D nn': every hour at minute nn
        RETURN to_timestamp(pgj_next_at_minute_(after_sec + 1, s.schminute, p_zone));
    END IF;
    from_day := (p_after AT TIME ZONE p_zone)::date;
    FOR i IN 1..8 LOOP
        day := NULL;
        y := extract(year FROM from_day)::int;
        m := extract(month FROM from_day)::int;
        IF s.schtype = 'W' AND s.schday IS NOT NULL THEN
            day := from_day + ((s.schday - extract(dow FROM from_day)::int) % 7 + 7) % 7;
        ELSIF s.schtype = 'W' OR s.schday IS NULL THEN
            day := from_day;
        ELSIF s.schyear IS NOT NULL THEN
            day := pgj_day_in_(s.schyear, s.schmonth, s.schday);
            IF day < from_day THEN
                day := NULL;
            END IF;
        ELSIF s.schmonth IS NOT NULL THEN
            FOR yy IN y..y + 8 LOOP
                day := pgj_day_in_(yy, s.schmonth, s.schday);
                EXIT WHEN day >= from_day;
                day := NULL;
            END LOOP;
        ELSE
            FOR n IN 1..13 LOOP
                day := pgj_day_in_(y, m, s.schday);
                EXIT WHEN day >= from_day;
                day := NULL;
                m := m + 1;
                IF m > 12 THEN
                    y := y + 1;
                    m := 1;
                END IF;
            END LOOP;
        END IF;
        IF day IS NULL THEN
            RETURN NULL;
        END IF;
        fire := pgj_first_reaching_((day - date '1970-01-01') * 86400::bigint + s.schhour * 3600 + s.schminute * 60, p_zone);
        IF fire > after_sec THEN
            RETURN to_timestamp(fire);
        END IF;
        from_day := day + 1;
    END LOOP;
    RETURN NULL;
END
$$;

-- pgj_job_next_ returns a job's first fire strictly after p_after, as the agent plans it: nothing
-- before its start schedule first fires after it was set (p_start_set); without recurrences, that
-- one fire. It computes from its arguments only, and reads no table.
CREATE FUNCTION pgjobs.pgj_job_next_(p_start text, p_start_set timestamptz, p_schedules text[],
    p_after timestamptz, p_zone text, p_anchor timestamptz) RETURNS timestamptz
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pgjobs, pg_catalog, pg_temp
AS $$
DECLARE
    active timestamptz;
    from_t timestamptz := p_after;
    best timestamptz;
    t timestamptz;
    sch text;
BEGIN
    IF p_start IS NOT NULL THEN
        active := pgj_next_fire_(p_start, p_start_set, p_zone, p_anchor);
        IF active IS NULL THEN
            RETURN NULL;
        END IF;
        IF cardinality(p_schedules) = 0 THEN
            RETURN CASE WHEN active > p_after THEN active END;
        END IF;
        IF active > from_t THEN
            from_t := active - interval '1 microsecond'; -- not active yet: the first recurrence at or after activation
        END IF;
    END IF;
    FOREACH sch IN ARRAY p_schedules LOOP
        t := pgj_next_fire_(sch, from_t, p_zone, p_anchor);
        IF t IS NOT NULL AND (best IS NULL OR t < best) THEN
            best := t;
        END IF;
    END LOOP;
    RETURN best;
END
$$;

-- pgj_jobs, with paused and timeout (part 3) and next_run never in the past.
-- next_run: the plan of the active agent while one leads (NULL for a moment after a change, until
-- it plans); else the last plan while it lies ahead, else computed from the schedules, in the last
-- agent's zone, intervals counted from now (as an agent starting now would). NULL while paused,
-- and for a job that never fires again.
CREATE OR REPLACE VIEW pgjobs.pgj_jobs WITH (security_barrier) AS
SELECT j.jobname AS name,
       j.jobfunction AS function,
       j.jobisstartup AS startup,
       st.schname AS start_schedule,
       ARRAY(SELECT s.schname FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
             WHERE js.jsjobid = j.jobid ORDER BY s.schname) AS schedules,
       ARRAY(SELECT s.schtext FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
             WHERE js.jsjobid = j.jobid ORDER BY s.schname) AS definitions,
       CASE
           WHEN j.jobpaused THEN NULL
           WHEN (SELECT EXISTS (SELECT FROM pgjobs.pgj_leader_ l JOIN pg_catalog.pg_stat_activity a
                                ON a.pid = l.pid AND a.datname = pg_catalog.current_database())) THEN f.firenext
           WHEN f.firenext > pg_catalog.now() THEN f.firenext
           ELSE pgjobs.pgj_job_next_(st.schtext, j.jobstartset,
                ARRAY(SELECT s.schtext FROM pgjobs.pgj_job_schedule_ js JOIN pgjobs.pgj_schedule_ s ON s.schid = js.jschid
                      WHERE js.jsjobid = j.jobid),
                greatest(pg_catalog.now(), f.firelast),
                coalesce((SELECT l.zone FROM pgjobs.pgj_leader_ l), pg_catalog.current_setting('TimeZone')),
                pg_catalog.now())
       END AS next_run,
       f.firelastrun AS last_run,
       f.firelaststatus AS last_status,
       coalesce(pg_catalog.pg_get_userbyid(j.jobownerid)::text, j.jobowner) AS owner,
       j.jobcreated AS created,
       j.jobpaused AS paused,
       j.jobtimeout AS timeout
FROM pgjobs.pgj_job_ j
LEFT JOIN pgjobs.pgj_schedule_ st ON st.schid = j.jobstartschid
LEFT JOIN pgjobs.pgj_fire_ f ON f.firejobid = j.jobid
WHERE pgjobs.pgj_visible_(j.jobownerid, pgjobs.pgj_role_(current_user));

GRANT EXECUTE ON FUNCTION
    -- the view computes next_run with them, as the querying role; they read no table
    pgjobs.pgj_parse_schedule_(text, text), pgjobs.pgj_offset_(bigint, text), pgjobs.pgj_first_reaching_(bigint, text),
    pgjobs.pgj_next_at_minute_(bigint, int, text), pgjobs.pgj_day_in_(int, int, int),
    pgjobs.pgj_next_fire_(text, timestamptz, text, timestamptz),
    pgjobs.pgj_job_next_(text, timestamptz, text[], timestamptz, text, timestamptz)
TO PUBLIC;
