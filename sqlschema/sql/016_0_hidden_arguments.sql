-- pgjobs schema version 16: a bound call's arguments are no longer in its view's rule, which every
-- role reads (pg_get_viewdef, pg_rewrite): version 15 showed each job's constants, a password
-- passed to a function included, to all roles. They are now evaluated once, when the call is set,
-- as the caller, and kept as values in a table of the caller's, in its call schema, that only
-- superusers and the caller read; the view, the caller's, reads them there. Only a reg* argument stays in the view, by OID: PostgreSQL then
-- keeps the object it names from being dropped without CASCADE (which stops the job), and such
-- values in a table would keep pg_upgrade from running.
--
-- The call schemas (pgjobs_call_<role OID>) are now owned by the superuser that installs pgjobs,
-- with USAGE for their role only: a role with jobs no longer gets a schema of its own to create
-- anything in. Their views and tables of arguments are made by a definer function
-- (pgj_call_store_) and given to the role, which copies into them the values it evaluated in its
-- own temporary table: no code of a role runs as the definer.
SET LOCAL search_path = pg_catalog, pg_temp;

-- pgj_call_acl_clear_ revokes every privilege on object p_object (of kind p_kind: SCHEMA or TABLE,
-- which covers views) that a role other than its owner holds: those default privileges granted.
CREATE FUNCTION pgjobs.pgj_call_acl_clear_(p_kind text, p_object text, p_acl aclitem[], p_owner oid) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    grantee oid;
BEGIN
    FOR grantee IN SELECT DISTINCT a.grantee FROM aclexplode(p_acl) a WHERE a.grantee <> p_owner LOOP
        EXECUTE format('REVOKE ALL ON %s %s FROM %s', p_kind, p_object,
                       CASE WHEN grantee = 0 THEN 'PUBLIC' ELSE quote_ident(pg_get_userbyid(grantee)) END);
    END LOOP;
END
$$;

-- pgj_call_space_ returns the call schema of role p_role, pgjobs_call_<its OID>, making it when
-- there is none: owned by the definer of the functions that call this one (the superuser that
-- installed pgjobs), with USAGE for p_role only. One that p_role owns (made by version 15's
-- functions, in a transaction the upgrade to version 16 did not see) is given to the definer, as
-- the upgrade does. One that another role owns, no superuser, is refused: it could create there.
CREATE FUNCTION pgjobs.pgj_call_space_(p_function text, p_role oid) RETURNS text
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    schema text := 'pgjobs_call_' || p_role;
    owner oid;
BEGIN
    owner := (SELECT nspowner FROM pg_namespace WHERE oid = to_regnamespace(schema)); -- as committed now
    IF owner IS NULL THEN
        BEGIN
            EXECUTE format('CREATE SCHEMA %I', schema);
        EXCEPTION WHEN duplicate_schema OR unique_violation THEN -- made meanwhile by the role's other session
            owner := (SELECT nspowner FROM pg_namespace WHERE oid = to_regnamespace(schema));
            IF owner IS NULL THEN
                RAISE EXCEPTION '%: schema %, where the calls of role %''s jobs go, was made by another session meanwhile',
                    p_function, schema, pg_get_userbyid(p_role)
                    USING ERRCODE = 'serialization_failure', HINT = 'run the transaction again';
            END IF;
            RETURN pgjobs.pgj_call_space_(p_function, p_role);
        END;
    ELSIF owner = p_role THEN
        EXECUTE format('ALTER SCHEMA %I OWNER TO %I', schema, current_user);
    ELSIF (SELECT rolsuper FROM pg_roles WHERE oid = owner) THEN
        RETURN schema;
    ELSE
        RAISE EXCEPTION '%: schema %, where the calls of role %''s jobs go, is owned by role %, which is no superuser',
            p_function, schema, pg_get_userbyid(p_role), pg_get_userbyid(owner)
            USING ERRCODE = 'insufficient_privilege',
            HINT = 'a superuser renames or drops that schema: pgjobs makes it, and only a superuser may own it';
    END IF;
    PERFORM pgjobs.pgj_call_acl_clear_('SCHEMA', quote_ident(schema), n.nspacl, n.nspowner)
    FROM pg_namespace n WHERE n.nspname = schema;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', schema, pg_get_userbyid(p_role));
    RETURN schema;
END
$$;

-- pgj_call_schema_ (version 15: it made a schema the role owned) is called no longer: no role may.
-- It is not dropped, as version 15 did not drop pgj_call_resolve_ (a role's view over it would
-- make the upgrade fail).
REVOKE ALL ON FUNCTION pgjobs.pgj_call_schema_(text) FROM PUBLIC;

-- pgj_type_regbase_ is the reg* type that type p_type is, or a domain over (NULL for any other).
CREATE FUNCTION pgjobs.pgj_type_regbase_(p_type oid) RETURNS regtype
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    WITH RECURSIVE base(t) AS (
        SELECT p_type
        UNION ALL
        SELECT ty.typbasetype FROM base JOIN pg_type ty ON ty.oid = base.t WHERE ty.typbasetype <> 0)
    SELECT t::regtype FROM base
    WHERE t IN ('regclass'::regtype, 'regtype'::regtype, 'regproc'::regtype, 'regprocedure'::regtype,
                'regoper'::regtype, 'regoperator'::regtype, 'regconfig'::regtype, 'regdictionary'::regtype,
                'regnamespace'::regtype, 'regrole'::regtype, to_regtype('regcollation'))
$$;

-- pgj_type_holds_reg_ tells whether values of type p_type hold reg* values inside an array, a row
-- or a range (pgj_type_reg_), walking only the types that may hold others (a walk costs 0.5 ms).
CREATE FUNCTION pgjobs.pgj_type_holds_reg_(p_type oid) RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT EXISTS (SELECT FROM pg_type ty WHERE ty.oid = p_type
                     AND (ty.typtype IN ('d', 'c', 'r', 'm') OR ty.typelem <> 0 AND ty.typlen = -1))
       AND pgjobs.pgj_type_regbase_(p_type) IS NULL
       AND EXISTS (SELECT FROM pgjobs.pgj_type_reg_(p_type) r WHERE r.leaf IS NOT NULL OR r.inside)
$$;

-- pgj_call_reg_refused_ says why a reg* value, OID p_oid of reg* type p_type, may not be kept in a
-- view of role p_role's call (which pins the object: it cannot be dropped without CASCADE), or
-- NULL: the object must exist, and be in a schema p_role may use, no temporary one, no call
-- schema and not pgjobs (a role must not pin another's call views, what a temporary schema holds,
-- nor pgjobs' own objects, which an upgrade may change).
CREATE FUNCTION pgjobs.pgj_call_reg_refused_(p_role oid, p_type regtype, p_oid oid) RETURNS text
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT CASE
        WHEN p_oid IS NULL OR p_type = 'regrole'::regtype THEN NULL -- a role is not pinned
        WHEN schema IS NULL THEN 'names no object of the database'
        WHEN n.nspname ~ '^pg_(toast_)?temp_' THEN 'names an object of a temporary schema'
        WHEN n.nspname ~ '^pgjobs_call_' THEN 'names an object of a call schema'
        WHEN n.nspname = 'pgjobs' THEN 'names an object of pgjobs (a call must not keep an upgrade from changing it)'
        WHEN NOT has_schema_privilege(p_role, schema, 'USAGE') THEN format('names an object of schema %s, which role %s may not use', n.nspname, pg_get_userbyid(p_role))
    END
    FROM (SELECT CASE p_type
        WHEN 'regclass'::regtype THEN (SELECT relnamespace FROM pg_class WHERE oid = p_oid)
        WHEN 'regtype'::regtype THEN (SELECT typnamespace FROM pg_type WHERE oid = p_oid)
        WHEN 'regproc'::regtype THEN (SELECT pronamespace FROM pg_proc WHERE oid = p_oid)
        WHEN 'regprocedure'::regtype THEN (SELECT pronamespace FROM pg_proc WHERE oid = p_oid)
        WHEN 'regoper'::regtype THEN (SELECT oprnamespace FROM pg_operator WHERE oid = p_oid)
        WHEN 'regoperator'::regtype THEN (SELECT oprnamespace FROM pg_operator WHERE oid = p_oid)
        WHEN 'regconfig'::regtype THEN (SELECT cfgnamespace FROM pg_ts_config WHERE oid = p_oid)
        WHEN 'regdictionary'::regtype THEN (SELECT dictnamespace FROM pg_ts_dict WHERE oid = p_oid)
        WHEN 'regnamespace'::regtype THEN (SELECT oid FROM pg_namespace WHERE oid = p_oid)
        ELSE (SELECT collnamespace FROM pg_collation WHERE oid = p_oid) -- regcollation
        END AS schema) o
    LEFT JOIN pg_namespace n ON n.oid = o.schema
$$;

-- pgj_call_args_ splits call p_call of function p_funcoid, as pgj_call_view_check_ writes it back
-- (schema-qualified, every constant with its type), into its arguments: their text, the name each
-- is passed by (NULL: by position), the type of the parameter each goes to, and whether the last
-- is passed VARIADIC. PostgreSQL writes no comment, dollar quote or E'' string back.
CREATE FUNCTION pgjobs.pgj_call_args_(p_function text, p_call text, p_funcoid oid,
    OUT args text[], OUT names text[], OUT types oid[], OUT last_variadic boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
    fn record;
    prefix text;
    inner_ text;
    tok text;
    seen text := '';
    depth int := 0;
    piece text := '';
    pieces text[] := '{}';
    m text[];
    pos int;
    k int;
BEGIN
    SELECT quote_ident(n.nspname) || '.' || quote_ident(p.proname) || '(' AS prefix, p.pronargs, p.provariadic,
           string_to_array(p.proargtypes::text, ' ')::oid[] AS intypes,
           ARRAY(SELECT a.name FROM unnest(p.proargnames, p.proargmodes) a(name, mode)
                 WHERE a.name IS NOT NULL AND coalesce(a.mode, 'i') IN ('i', 'b', 'v')) AS innames
    INTO fn FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.oid = p_funcoid;
    IF NOT starts_with(p_call, fn.prefix) OR right(p_call, 1) <> ')' THEN
        RAISE EXCEPTION '%: cannot read the arguments of call %', p_function, p_call USING ERRCODE = 'internal_error';
    END IF;
    inner_ := substr(p_call, length(fn.prefix) + 1, length(p_call) - length(fn.prefix) - 1);
    FOR tok IN SELECT t.m[1] FROM regexp_matches(inner_, $re$('(?:[^']|'')*'|"(?:[^"]|"")*"|[(\[]|[)\]]|,|[^'"(\[)\],]+)$re$, 'g')
                                  WITH ORDINALITY AS t(m, i) ORDER BY t.i LOOP
        seen := seen || tok;
        IF tok = ',' AND depth = 0 THEN
            pieces := pieces || btrim(piece);
            piece := '';
            CONTINUE;
        ELSIF tok IN ('(', '[') THEN
            depth := depth + 1;
        ELSIF tok IN (')', ']') THEN
            depth := depth - 1;
        END IF;
        piece := piece || tok;
    END LOOP;
    IF seen <> inner_ OR depth <> 0 THEN
        RAISE EXCEPTION '%: cannot read the arguments of call %', p_function, p_call USING ERRCODE = 'internal_error';
    END IF;
    IF btrim(piece) <> '' THEN
        pieces := pieces || btrim(piece);
    END IF;
    args := '{}'; names := '{}'; types := '{}'; last_variadic := false;
    FOR k IN 1 .. cardinality(pieces) LOOP
        piece := pieces[k];
        IF piece ~ '^VARIADIC\s' THEN
            IF k <> cardinality(pieces) THEN
                RAISE EXCEPTION '%: cannot read the arguments of call %', p_function, p_call USING ERRCODE = 'internal_error';
            END IF;
            last_variadic := true;
            piece := regexp_replace(piece, '^VARIADIC\s+', '');
        END IF;
        m := regexp_match(piece, '^("(?:[^"]|"")+"|[a-z_][a-z0-9_]*) => (.*)$');
        IF m IS NULL THEN
            pos := k;
            IF pos > fn.pronargs AND fn.provariadic = '"any"'::regtype THEN
                pos := fn.pronargs; -- VARIADIC "any": each argument goes as it is
            END IF;
            names := names || NULL::text;
        ELSE
            m[1] := CASE WHEN left(m[1], 1) = '"' THEN replace(substr(m[1], 2, length(m[1]) - 2), '""', '"') ELSE m[1] END;
            pos := array_position(fn.innames, m[1]);
            names := names || m[1];
            piece := m[2];
        END IF;
        IF pos IS NULL OR pos > fn.pronargs THEN
            RAISE EXCEPTION '%: cannot read the arguments of call %', p_function, p_call USING ERRCODE = 'internal_error';
        END IF;
        args := args || piece;
        types := types || fn.intypes[pos];
    END LOOP;
END
$$;
