-- The late_limit setting in milliseconds: how late an agent still runs a fire that fell due while
-- no agent could run it.
SELECT (extract(epoch FROM coalesce((SELECT value::interval FROM pgjobs.pgj_setting_ WHERE name = 'late_limit'), interval '30 seconds')) * 1000)::bigint
