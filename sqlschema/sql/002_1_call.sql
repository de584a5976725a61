-- pgjobs schema version 2, part 1: pgj_call_syntax_ lexes a job's function call as PostgreSQL does.
--
-- A job's function call (argument 2 of pgj_create_job) is run by the agent as SELECT <call>, as the
-- job's owner, with standard_conforming_strings = on. Version 1 checked it with a scanner that did
-- not know E'...' escapes or dollar quotes, so f(E'\'');SELECT evil();-- passed as one call and
-- both statements ran; it was also quadratic. This version lexes the call by the rules of
-- PostgreSQL 15 (src/backend/parser/scan.l), as if standard_conforming_strings were on whatever
-- the caller's session says, and accepts exactly one call with constant arguments:
--
--   call   := [name '.'] name '(' [arg {',' arg}] ')'       nothing but blanks after the ')'
--   arg    := [name ('=>' | ':=')] [VARIADIC] value         after a named argument, all are named
--   value  := const {'::' type} | '(' value ')' {'::' type}
--   const  := ['+' | '-'] number | string | TRUE | FALSE | NULL | type string
--           | ARRAY '[' [value {',' value}] ']'              (no ARRAY inside parentheses)
--   (VARIADIC, parentheses and casts of ARRAY elements are there for the forms PostgreSQL writes a
--   call back in, as pgj_call_resolve_ stores it: public.f(VARIADIC ARRAY[(0.5)::double precision]))
--   type   := name ['.' name] ['(' integer {',' integer} ')'] {'[' [integer] ']'}
--           | double precision | character varying [(n)] | char varying [(n)] | nchar varying [(n)]
--           | national character|char [varying] [(n)] | bit varying [(n)]
--           | timestamp|time [(p)] with|without time zone
--           | interval year|month|day|hour|minute|second [(p)] | interval <field> to <field> [(p)]
--             (the interval fields after '::' only; '[...]' after '::' only)
--   name   := identifier | "identifier" | U&"identifier" [UESCAPE 'c']
--   string := '...' | E'...' | U&'...' [UESCAPE 'c'] | $tag$...$tag$ | B'...' | X'...' | N'...'
--             (after a type: '...', E'...', U&'...' or $tag$...$tag$ only, as in PostgreSQL)
--   number := digits [. digits] [e [+|-] digits] | . digits [...]
--
-- Blanks (space, tab, newline, carriage return, form feed) may separate tokens. Everything else
-- is refused: semicolons, comments anywhere outside a literal (-- and nested /* */), operators,
-- nested calls, subqueries, parameters ($1), text after the call,
-- unterminated literals, a missing argument list. Where this is stricter than PostgreSQL:
--   * a backslash in a '...' or N'...' string: standard_conforming_strings = off would read it as
--     an escape, so the call would read otherwise in such a session (pgj_call_resolves_ prepares
--     it in the caller's session); E'\\' and $$\$$ read the same either way;
--   * a string right after a string (PostgreSQL joins 'a'<newline>'b' into one literal);
--   * E'...' escapes \ooo and \xhh for the byte 0 or a byte above 127, \u and \U escapes for 0 or
--     a surrogate, and surrogates in U&'...' (write the character itself); invalid escapes;
--   * B'...' with other digits than 0 and 1, X'...' with other digits than hexadecimal ones;
--   * dollar-quote tags with non-ASCII characters;
--   * UESCAPE followed by anything but a plain '...' string of one allowed character;
--   * operators glued to others, except => followed by a sign (f(x=>-1) is taken);
--   * keywords where gram.y does not take them unquoted: an unqualified function name that is a
--     reserved or column-name keyword (select, coalesce: write the function with its schema),
--     a schema that is a reserved or type-function keyword, an argument name that is a reserved or
--     column-name keyword, a type that is a reserved keyword or a column-name keyword other than
--     the types int ... numeric (and modifiers those do not take), an unknown multi-word type;
--   * numbers glued to letters or dots (1abc, 0x1F, 1_000, 1..2), integers of more than 9 digits
--     as type modifiers or array bounds, interval '1' day (fields after the string), and
--     ARRAY[[1], [2]] (write ARRAY[ARRAY[1], ARRAY[2]]).
--
-- LIMIT: a call may be at most 8192 bytes long (octet_length, surrounding blanks included); a
-- longer one is refused at once, before it is lexed, with SQLSTATE 54000 (program_limit_exceeded).
-- The check runs in linear time: it walks the characters once (FOREACH over
-- string_to_array(call, NULL)) as a state machine, without substr(text, i, 1) or text[]
-- subscripts in the loop (the only subscripts are of int[]: the tag of a dollar quote).
--
-- A refused call raises SQLSTATE 42601 (syntax_error) with the message
--   <p_function>: argument <p_argno> (function call) is not one function call: <reason> at character <n> near "<excerpt>"
-- where n counts characters from 1 in p_call as given (surrounding blanks included; the length
-- + 1 for the end of the text), and the excerpt is at most 60 characters of p_call from 30
-- before that position, "..." marking what was cut, control characters shown as spaces.
-- A NULL or empty call raises the error of pgj_require_, as in version 1.
-- The result is the call without surrounding blanks.
--
-- p_backslashes takes a backslash in '...' as a plain character (standard_conforming_strings on):
-- for the calls pgj_call_resolve_ stores, as PostgreSQL writes them back, which only the agent
-- reads, always with standard_conforming_strings on.
DROP FUNCTION pgjobs.pgj_call_syntax_(text, int, text);
CREATE FUNCTION pgjobs.pgj_call_syntax_(p_function text, p_argno int, p_call text, p_backslashes boolean DEFAULT false) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
    c_max_octets constant int := 8192;
    c_not_const constant text := 'an argument that is not a constant (a number, a string, true, false, null, a type and a string, or ARRAY[...])';
    -- The class of each ASCII character, by code (index = code + 1): X not allowed, S whitespace,
    -- L identifier start, D digit, O an operator character with no role here; and for the others
    -- a letter of their own: q ' w " d $ l ( r ) c , p . k : s ; m - a + h / e = g > b [ n ].
    c_classes constant text :=
        'XXXXXXXXXSSXSSXXXXXXXXXXXXXXXXXX' || 'SOwOdOOqlrOacmphDDDDDDDDDDksOegO'
        || 'OLLLLLLLLLLLLLLLLLLLLLLLLLLbXnOL' || 'OLLLLLLLLLLLLLLLLLLLLLLLLLLXOXOX';
    -- Multi-word type names, as v_twords spells them ('()' where the modifier is).
    c_words_any constant text[] COLLATE "C" := ARRAY[
        'double precision',
        'character varying', 'character varying ()', 'char varying', 'char varying ()',
        'national character', 'national character ()', 'national character varying',
        'national character varying ()', 'national char', 'national char ()',
        'national char varying', 'national char varying ()', 'nchar varying', 'nchar varying ()',
        'bit varying', 'bit varying ()',
        'timestamp with time zone', 'timestamp without time zone',
        'timestamp () with time zone', 'timestamp () without time zone',
        'time with time zone', 'time without time zone',
        'time () with time zone', 'time () without time zone'];
    -- Column-name keywords that are also types (gram.y: Numeric, Bit, Character, ConstDatetime,
    -- ConstInterval), with the number of integer modifiers each takes at most.
    c_type_keywords constant text[] COLLATE "C" := ARRAY['int', 'integer', 'smallint', 'bigint', 'real', 'boolean',
        'float', 'bit', 'character', 'char', 'varchar', 'nchar', 'timestamp', 'time', 'interval',
        'decimal', 'dec', 'numeric'];
    c_type_keyword_mods constant int[] := ARRAY[0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 99, 99, 99];
    c_words_cast constant text[] COLLATE "C" := ARRAY[
        'interval year', 'interval month', 'interval day', 'interval hour', 'interval minute',
        'interval second', 'interval second ()', 'interval year to month', 'interval day to hour',
        'interval day to minute', 'interval day to second', 'interval day to second ()',
        'interval hour to minute', 'interval hour to second', 'interval hour to second ()',
        'interval minute to second', 'interval minute to second ()'];

    -- The lexer: one character at a time, NULL (code -1) after the last one.
    v_c       text COLLATE "C";
    v_k       int;                        -- its code if one byte, 128 if more, -1 at the end
    v_cls     text COLLATE "C";           -- its class, see c_classes; 'L' above 127, 'E' at the end
    v_pos     int := 0;                   -- its position, from 1
    v_st      text COLLATE "C" := 'init'; -- the lexer state
    v_again   boolean;                    -- the lexer has not consumed the character: look at it again
    v_start   int;                        -- where the token being lexed started
    v_word    text COLLATE "C";           -- an identifier's first 20 characters, A-Z lowered
    v_wlen    int;                        -- its length
    v_int     boolean;                    -- an integer of at most 9 digits (an Iconst)
    v_skind   text COLLATE "C";           -- literal: q n e b x d u (U&'' U&"") i ("")
    v_slen    int;                        -- characters in a '...' string or "..." identifier
    v_sfirst  text COLLATE "C";           -- the first character of a '...' string
    v_tag     int[];                      -- the codes of a dollar quote's tag
    v_taglen  int;
    v_match   int;                        -- characters of $tag$ matched so far inside a dollar quote
    v_num     bigint;                     -- the value of an escape in an E'...' string
    v_digits  int;                        -- digits of it so far
    v_need    int;                        -- digits a \u or \U escape needs
    v_hex     int;
    v_epos    int;                        -- where the escape started
    v_sign    text COLLATE "C";           -- the sign after =>
    v_ubuf    text[] := '{}';             -- the characters of the U& literal being lexed
    -- The token just lexed: its kind ('ident', 'qident', 'str', 'num', 'eof' or the punctuation
    -- itself) and position; the details are in the lexer's variables above.
    v_tok     text COLLATE "C";
    v_tpos    int;

    -- The recogniser.
    v_g       text COLLATE "C" := 'name'; -- its state
    v_redo    boolean;                    -- look at the same token again in the new state
    v_pending boolean := false;           -- a U& literal was the last token: a UESCAPE may follow
    v_pbuf    text[];                     -- its characters
    v_ppos    int;                        -- its position
    v_gsaved  text COLLATE "C";           -- the state to go back to after UESCAPE 'c'
    v_esc     text COLLATE "C";           -- the escape character to check v_pbuf with, once known
    v_ust     int;
    v_u       text COLLATE "C";
    v_depth   int := 0;                   -- ARRAY[ nesting
    v_paren   int := 0;                   -- ( nesting around a value, as in (0.5)::double precision
    v_named   boolean := false;           -- an argument had a name: the next ones must have one too
    v_fword   text COLLATE "C";           -- the function name's first part, if an unquoted identifier
    v_fpos    int;
    v_kw_r    text[] COLLATE "C";         -- the server's reserved keywords, read when first needed
    v_kw_c    text[] COLLATE "C";         -- its column-name keywords
    v_kw_t    text[] COLLATE "C";         -- its type-function-name keywords
    v_kwword  text COLLATE "C";           -- a name to check against them, once the token is taken
    v_kwdeny  text COLLATE "C";           -- the keyword categories it may not be: R, C, T
    v_kwwhat  text;                       -- what it names, for the error
    v_kwpos   int;
    v_kwcat   text COLLATE "C";
    v_i       int;
    v_tctx    text COLLATE "C";           -- 'cast' for a type after ::, 'lit' for the type of a type string
    v_twords  text COLLATE "C";           -- the type's words, '?' for a quoted or long one
    v_tcount  int;
    v_tmods   int;                        -- its integer modifiers
    v_tqual   boolean;                    -- the type has a schema
    v_tpos0   int;
    v_tcheck  boolean := false;
    v_done    boolean := false;

    v_problem text;
    v_at      int;
    v_from    int;
    v_excerpt text;
BEGIN
    IF octet_length(p_call) > c_max_octets THEN
        RAISE EXCEPTION '%: argument % (function call) is % bytes long, longer than the limit of % bytes',
                p_function, p_argno, octet_length(p_call), c_max_octets
            USING ERRCODE = 'program_limit_exceeded',
                  HINT = 'a job runs one function call: put longer code into a function and call that';
    END IF;
    PERFORM pgjobs.pgj_require_(p_function, p_argno, 'function call', p_call);

    <<chars>>
    FOREACH v_c IN ARRAY string_to_array(p_call, NULL) || NULL::text LOOP
        v_pos := v_pos + 1;
        IF v_c IS NULL THEN
            v_k := -1; v_cls := 'E';
        ELSIF octet_length(v_c) = 1 THEN
            v_k := ascii(v_c);
            v_cls := CASE WHEN v_k < 128 THEN substr(c_classes, v_k + 1, 1) ELSE 'L' END;
        ELSE
            v_k := 128; v_cls := 'L';
        END IF;

        <<step>>
        LOOP
            v_again := false;
            v_tok := NULL;

            -- The lexer. The states most characters meet come first.
            IF v_st = 'init' THEN
                v_start := v_pos;
                IF v_cls = 'S' THEN
                    NULL;
                ELSIF v_cls = 'L' THEN
                    v_wlen := 1;
                    v_word := CASE WHEN v_k BETWEEN 65 AND 90 THEN chr(v_k + 32) ELSE v_c END;
                    -- e' b' x' n' u&' u&" start literals, as flex's longest match decides.
                    v_st := CASE WHEN v_word IN ('e', 'b', 'x', 'n', 'u') THEN 'p' || v_word ELSE 'id' END;
                ELSIF v_cls = 'q' THEN
                    v_st := 'xq'; v_skind := 'q'; v_slen := 0;
                ELSIF v_cls IN ('l', 'r', 'c', 'b', 'n') THEN
                    v_tok := v_c;
                ELSIF v_cls = 'D' THEN
                    v_st := 'int';
                ELSIF v_cls = 'w' THEN
                    v_st := 'xd'; v_skind := 'i'; v_slen := 0;
                ELSIF v_cls = 'd' THEN
                    v_st := 'dollar'; v_skind := 'd';
                ELSIF v_cls = 'p' THEN
                    v_st := 'dot';
                ELSIF v_cls = 'k' THEN
                    v_st := 'colon';
                ELSIF v_cls = 'm' THEN
                    v_st := 'minus';
                ELSIF v_cls = 'a' THEN
                    v_st := 'plus';
                ELSIF v_cls = 'e' THEN
                    v_st := 'equals';
                ELSIF v_cls = 'E' THEN
                    v_tok := 'eof';
                ELSIF v_cls = 's' THEN
                    v_problem := 'a semicolon (a job runs one function call)';
                ELSIF v_cls = 'h' THEN
                    v_st := 'slash';
                ELSIF v_cls IN ('O', 'g') THEN
                    v_problem := 'an operator';
                ELSE
                    v_problem := 'a character that cannot appear here';
                END IF;
            ELSIF v_st = 'xq' THEN
                IF v_k = 39 THEN
                    v_st := 'xq''';
                ELSIF v_k = 92 AND NOT p_backslashes THEN
                    -- Refused so that the call reads the same with standard_conforming_strings off.
                    v_problem := E'a backslash in a ''...'' string, which standard_conforming_strings = off would read as an escape (write E''\\\\'' or $$\\$$)';
                ELSIF v_k = -1 THEN
                    v_problem := 'an unterminated quoted string'; v_at := v_start;
                ELSE
                    v_slen := v_slen + 1;
                    IF v_slen = 1 THEN v_sfirst := v_c; END IF;
                END IF;
            ELSIF v_st = 'xq''' THEN
                IF v_k = 39 THEN -- '' stands for '
                    v_st := 'xq'; v_slen := v_slen + 1;
                    IF v_slen = 1 THEN v_sfirst := v_c; END IF;
                ELSE
                    v_tok := 'str'; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = 'id' THEN
                IF v_cls IN ('L', 'D', 'd') THEN
                    v_wlen := v_wlen + 1;
                    IF v_wlen <= 20 THEN
                        v_word := v_word || CASE WHEN v_k BETWEEN 65 AND 90 THEN chr(v_k + 32) ELSE v_c END;
                    END IF;
                ELSE
                    v_tok := 'ident'; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = 'xe' THEN
                IF v_k = 92 THEN
                    v_st := 'xe-esc';
                ELSIF v_k = 39 THEN
                    v_st := 'xe''';
                ELSIF v_k = -1 THEN
                    v_problem := 'an unterminated quoted string'; v_at := v_start;
                END IF;
            ELSIF v_st = 'xe''' THEN
                IF v_k = 39 THEN
                    v_st := 'xe';
                ELSE
                    v_tok := 'str'; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = 'xe-esc' THEN -- after a backslash: \ooo, \xhh, \uXXXX, \UXXXXXXXX or \<any character>
                v_epos := v_pos - 1;
                IF v_k BETWEEN 48 AND 55 THEN
                    v_st := 'xe-oct'; v_num := v_k - 48; v_digits := 1;
                ELSIF v_k = 120 THEN
                    v_st := 'xe-hex'; v_num := 0; v_digits := 0;
                ELSIF v_k = 117 OR v_k = 85 THEN
                    v_st := 'xe-uni'; v_num := 0; v_digits := 0; v_need := CASE WHEN v_k = 117 THEN 4 ELSE 8 END;
                ELSIF v_k = -1 THEN
                    v_problem := 'an unterminated quoted string'; v_at := v_start;
                ELSE
                    v_st := 'xe';
                END IF;
            ELSIF v_st = 'xe-oct' THEN
                IF v_k BETWEEN 48 AND 55 AND v_digits < 3 THEN
                    v_num := v_num * 8 + v_k - 48; v_digits := v_digits + 1;
                ELSIF v_num % 256 = 0 OR v_num % 256 > 127 THEN
                    v_problem := 'an escape for the byte 0 or a byte above 127 (write the character itself)'; v_at := v_epos;
                ELSE
                    v_st := 'xe'; v_again := true;
                END IF;
            ELSIF v_st = 'xe-hex' THEN
                v_hex := CASE WHEN v_k BETWEEN 48 AND 57 THEN v_k - 48 WHEN v_k BETWEEN 97 AND 102 THEN v_k - 87
                              WHEN v_k BETWEEN 65 AND 70 THEN v_k - 55 ELSE -1 END;
                IF v_hex >= 0 AND v_digits < 2 THEN
                    v_num := v_num * 16 + v_hex; v_digits := v_digits + 1;
                ELSIF v_digits > 0 AND (v_num = 0 OR v_num > 127) THEN
                    v_problem := 'an escape for the byte 0 or a byte above 127 (write the character itself)'; v_at := v_epos;
                ELSE -- \x without digits is the letter x
                    v_st := 'xe'; v_again := true;
                END IF;
            ELSIF v_st = 'xe-uni' THEN
                v_hex := CASE WHEN v_k BETWEEN 48 AND 57 THEN v_k - 48 WHEN v_k BETWEEN 97 AND 102 THEN v_k - 87
                              WHEN v_k BETWEEN 65 AND 70 THEN v_k - 55 ELSE -1 END;
                IF v_hex < 0 THEN
                    v_problem := E'an invalid Unicode escape (write \\uXXXX or \\UXXXXXXXX)'; v_at := v_epos;
                ELSE
                    v_num := v_num * 16 + v_hex; v_digits := v_digits + 1;
                    IF v_digits = v_need THEN
                        IF v_num = 0 OR v_num > 1114111 OR v_num BETWEEN 55296 AND 57343 THEN
                            v_problem := 'a Unicode escape for 0, a surrogate or no character'; v_at := v_epos;
                        END IF;
                        v_st := 'xe';
                    END IF;
                END IF;
            ELSIF v_st = 'dq' THEN -- inside $tag$...: look for the first $tag$, as scan.l does
                IF v_k = -1 THEN
                    v_problem := 'an unterminated dollar-quoted string'; v_at := v_start;
                ELSIF v_match = 0 THEN
                    IF v_k = 36 THEN v_match := 1; END IF;
                ELSIF v_match <= v_taglen THEN
                    IF v_k = v_tag[v_match] THEN
                        v_match := v_match + 1;
                    ELSE
                        v_match := CASE WHEN v_k = 36 THEN 1 ELSE 0 END;
                    END IF;
                ELSIF v_k = 36 THEN
                    v_tok := 'str'; v_st := 'init';
                ELSE
                    v_match := 0;
                END IF;
            ELSIF v_st = 'xd' THEN
                IF v_k = 34 THEN
                    v_st := 'xd"';
                ELSIF v_k = -1 THEN
                    v_problem := 'an unterminated quoted identifier'; v_at := v_start;
                ELSE
                    v_slen := v_slen + 1;
                END IF;
            ELSIF v_st = 'xd"' THEN
                IF v_k = 34 THEN -- "" stands for "
                    v_st := 'xd'; v_slen := v_slen + 1;
                ELSIF v_slen = 0 THEN
                    v_problem := 'a zero-length quoted identifier'; v_at := v_start;
                ELSE
                    v_tok := 'qident'; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = 'xus' THEN
                IF v_k = 39 THEN
                    v_st := 'xus''';
                ELSIF v_k = -1 THEN
                    v_problem := 'an unterminated quoted string'; v_at := v_start;
                ELSE
                    v_ubuf := array_append(v_ubuf, v_c);
                END IF;
            ELSIF v_st = 'xus''' THEN
                IF v_k = 39 THEN
                    v_st := 'xus'; v_ubuf := array_append(v_ubuf, v_c);
                ELSE
                    v_tok := 'str'; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = 'xui' THEN
                IF v_k = 34 THEN
                    v_st := 'xui"';
                ELSIF v_k = -1 THEN
                    v_problem := 'an unterminated quoted identifier'; v_at := v_start;
                ELSE
                    v_ubuf := array_append(v_ubuf, v_c);
                END IF;
            ELSIF v_st = 'xui"' THEN
                IF v_k = 34 THEN
                    v_st := 'xui'; v_ubuf := array_append(v_ubuf, v_c);
                ELSIF cardinality(v_ubuf) = 0 THEN
                    v_problem := 'a zero-length quoted identifier'; v_at := v_start;
                ELSE
                    v_tok := 'qident'; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = 'xb' THEN
                IF v_k = 39 THEN
                    v_tok := 'str'; v_st := 'init';
                ELSIF v_k = -1 THEN
                    v_problem := 'an unterminated bit string'; v_at := v_start;
                ELSIF v_k NOT IN (48, 49) THEN
                    v_problem := 'a bit string digit other than 0 and 1';
                END IF;
            ELSIF v_st = 'xh' THEN
                IF v_k = 39 THEN
                    v_tok := 'str'; v_st := 'init';
                ELSIF v_k = -1 THEN
                    v_problem := 'an unterminated hexadecimal string'; v_at := v_start;
                ELSIF NOT (v_k BETWEEN 48 AND 57 OR v_k BETWEEN 65 AND 70 OR v_k BETWEEN 97 AND 102) THEN
                    v_problem := 'a hexadecimal string digit other than 0-9, A-F';
                END IF;
            ELSIF v_st IN ('pe', 'pb', 'px', 'pn') THEN -- after e, b, x or n at the start of a token
                IF v_k = 39 THEN
                    v_skind := substr(v_st, 2, 1);
                    v_st := CASE v_skind WHEN 'e' THEN 'xe' WHEN 'b' THEN 'xb' WHEN 'x' THEN 'xh' ELSE 'xq' END;
                    v_slen := 0;
                ELSE
                    v_st := 'id'; v_again := true;
                END IF;
            ELSIF v_st = 'pu' THEN
                IF v_k = 38 THEN
                    v_st := 'pu&';
                ELSE
                    v_st := 'id'; v_again := true;
                END IF;
            ELSIF v_st = 'pu&' THEN
                v_skind := 'u'; v_ubuf := '{}';
                IF v_k = 39 THEN
                    v_st := 'xus';
                ELSIF v_k = 34 THEN
                    v_st := 'xui';
                ELSE -- PostgreSQL reads the identifier u and the operator &
                    v_problem := 'an operator'; v_at := v_pos - 1;
                END IF;
            ELSIF v_st = 'int' OR v_st = 'frac' OR v_st = 'exp' THEN -- 1, 1.5 or .5, 1e5
                IF v_cls = 'D' THEN
                    NULL;
                ELSIF v_cls = 'p' AND v_st = 'int' THEN
                    v_st := 'frac';
                ELSIF v_k IN (69, 101) AND v_st <> 'exp' THEN
                    v_st := 'e';
                ELSIF v_cls IN ('L', 'd', 'p') THEN
                    v_problem := 'trailing junk after a number'; v_at := v_start;
                ELSE
                    v_tok := 'num'; v_int := v_st = 'int' AND v_pos - v_start <= 9; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = 'e' OR v_st = 'e+' THEN
                IF v_cls = 'D' THEN
                    v_st := 'exp';
                ELSIF v_cls IN ('a', 'm') AND v_st = 'e' THEN
                    v_st := 'e+';
                ELSE
                    v_problem := 'a number with an incomplete exponent'; v_at := v_start;
                END IF;
            ELSIF v_st = 'dot' THEN
                IF v_cls = 'D' THEN
                    v_st := 'frac';
                ELSIF v_cls = 'p' THEN
                    v_problem := 'two dots'; v_at := v_start;
                ELSE
                    v_tok := '.'; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = 'dollar' THEN -- after $ at the start of a token
                IF v_cls = 'd' THEN
                    v_tag := '{}'; v_taglen := 0; v_match := 0; v_st := 'dq';
                ELSIF v_cls = 'L' AND v_k < 128 THEN
                    v_tag := ARRAY[v_k]; v_taglen := 1; v_st := 'dtag';
                ELSIF v_cls = 'D' THEN
                    v_problem := 'a parameter ($n)'; v_at := v_start;
                ELSIF v_cls = 'L' THEN
                    v_problem := 'a dollar-quote tag with a non-ASCII character'; v_at := v_start;
                ELSE
                    v_problem := 'a dollar sign'; v_at := v_start;
                END IF;
            ELSIF v_st = 'dtag' THEN
                IF v_cls = 'd' THEN
                    v_match := 0; v_st := 'dq';
                ELSIF v_cls IN ('L', 'D') AND v_k < 128 THEN
                    v_tag := v_tag || v_k; v_taglen := v_taglen + 1;
                ELSIF v_cls = 'L' THEN
                    v_problem := 'a dollar-quote tag with a non-ASCII character'; v_at := v_start;
                ELSE
                    v_problem := 'a dollar sign'; v_at := v_start;
                END IF;
            ELSIF v_st = 'colon' THEN
                IF v_cls = 'k' THEN
                    v_tok := '::'; v_st := 'init';
                ELSIF v_cls = 'e' THEN
                    v_tok := ':='; v_st := 'init';
                ELSE
                    v_problem := 'a colon'; v_at := v_start;
                END IF;
            ELSIF v_st = 'minus' OR v_st = 'plus' THEN
                IF v_cls = 'm' AND v_st = 'minus' THEN
                    v_problem := 'a comment (--)'; v_at := v_start;
                ELSIF v_cls IN ('O', 'a', 'm', 'h', 'e', 'g') THEN
                    v_problem := 'an operator'; v_at := v_start;
                ELSE
                    v_tok := CASE v_st WHEN 'minus' THEN '-' ELSE '+' END; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = 'equals' THEN
                IF v_cls = 'g' THEN
                    v_st := '=>';
                ELSE
                    v_problem := 'an operator'; v_at := v_start;
                END IF;
            ELSIF v_st = '=>' THEN
                IF v_cls IN ('a', 'm') THEN
                    -- PostgreSQL reads =>- as => and -: keep the sign for the next character
                    v_sign := v_c; v_st := '=>sign';
                ELSIF v_cls IN ('O', 'h', 'e', 'g') THEN
                    v_problem := 'an operator'; v_at := v_start;
                ELSE
                    v_tok := '=>'; v_st := 'init'; v_again := true;
                END IF;
            ELSIF v_st = '=>sign' THEN
                IF v_cls = 'm' AND v_sign = '-' THEN
                    v_problem := 'a comment (--)'; v_at := v_pos - 1;
                ELSIF v_cls IN ('O', 'a', 'm', 'h', 'e', 'g') THEN
                    v_problem := 'an operator'; v_at := v_start;
                ELSE
                    v_tok := '=>'; v_st := 'sign'; v_again := true;
                END IF;
            ELSIF v_st = 'sign' THEN
                v_start := v_pos - 1; v_tok := v_sign; v_st := 'init'; v_again := true;
            ELSIF v_st = 'slash' THEN
                v_problem := CASE WHEN v_k = 42 THEN 'a comment (/*)' ELSE 'an operator' END; v_at := v_start;
            END IF;
            EXIT chars WHEN v_problem IS NOT NULL;
            EXIT step WHEN v_tok IS NULL AND NOT v_again;
            CONTINUE step WHEN v_tok IS NULL;

            -- The recogniser, for the token v_tok at v_tpos.
            v_tpos := v_start;
            -- A U& literal may be followed by UESCAPE 'c'; its escapes are checked once that is known.
            IF v_g = 'uesc' THEN
                IF v_tok = 'str' AND v_skind = 'q' AND v_slen = 1 AND octet_length(v_sfirst) = 1
                        AND strpos(E'0123456789abcdefABCDEF+''" \t\n\r\f', v_sfirst) = 0 THEN
                    v_esc := v_sfirst; v_g := v_gsaved; v_tok := NULL;
                ELSE
                    v_problem := 'UESCAPE without a one-character string such as ''!'' after it'; v_at := v_tpos;
                    EXIT chars;
                END IF;
            ELSIF v_pending THEN
                IF v_tok = 'ident' AND v_word = 'uescape' THEN
                    v_gsaved := v_g; v_g := 'uesc'; v_tok := NULL;
                ELSE
                    v_esc := E'\\';
                END IF;
            END IF;
            IF v_esc IS NOT NULL THEN
                -- The escapes PostgreSQL accepts: cc, c+XXXXXX and cXXXX, c the escape character,
                -- for a code point other than 0 and the surrogates.
                v_ust := 0;
                FOREACH v_u IN ARRAY v_pbuf LOOP
                    v_hex := strpos('0123456789abcdef0123456789ABCDEF', v_u) - 1;
                    IF v_ust = 0 THEN
                        IF v_u = v_esc THEN v_ust := 1; END IF;
                    ELSIF v_ust = 1 AND v_u = v_esc THEN
                        v_ust := 0;
                    ELSIF v_ust = 1 AND v_u = '+' THEN
                        v_ust := 2; v_need := 6; v_num := 0; v_digits := 0;
                    ELSIF v_hex < 0 OR octet_length(v_u) > 1 THEN
                        v_ust := -1;
                        EXIT;
                    ELSE
                        IF v_ust = 1 THEN
                            v_ust := 2; v_need := 4; v_num := 0; v_digits := 0;
                        END IF;
                        v_num := v_num * 16 + v_hex % 16; v_digits := v_digits + 1;
                        IF v_digits = v_need THEN
                            IF v_num = 0 OR v_num > 1114111 OR v_num BETWEEN 55296 AND 57343 THEN
                                v_ust := -1;
                                EXIT;
                            END IF;
                            v_ust := 0;
                        END IF;
                    END IF;
                END LOOP;
                IF v_ust <> 0 THEN
                    v_problem := format('an invalid Unicode escape in a U& literal (write %sXXXX or %s+XXXXXX, not a surrogate)', v_esc, v_esc);
                    v_at := v_ppos;
                    EXIT chars;
                END IF;
                v_pending := false; v_esc := NULL;
            END IF;
            IF v_tok IN ('str', 'qident') AND v_skind = 'u' THEN
                v_pbuf := v_ubuf; v_ubuf := '{}'; v_pending := true; v_ppos := v_tpos;
            END IF;

            <<token>>
            LOOP
                EXIT token WHEN v_tok IS NULL;
                v_redo := false;
                IF v_g IN ('arg', 'const', 'aconst') THEN
                    -- arg: an argument, maybe named; const: the value of a named one, or one after
                    -- VARIADIC or in parentheses; aconst: an ARRAY element
                    IF v_tok = 'ident' AND v_word = 'variadic' AND v_g IN ('arg', 'const') AND v_paren = 0 THEN
                        v_g := 'const'; -- as PostgreSQL writes a variadic call back: VARIADIC ARRAY[...]
                    ELSIF v_tok = '(' AND NOT (v_g = 'arg' AND v_named) THEN
                        v_paren := v_paren + 1; v_g := 'const'; -- as in (0.5)::double precision
                    ELSIF v_tok = 'ident' AND v_word = 'array' AND v_paren > 0 THEN
                        v_problem := c_not_const;
                    ELSIF v_g = 'arg' AND v_named AND NOT (v_tok IN ('qident', ')')
                            OR v_tok = 'ident' AND v_word NOT IN ('true', 'false', 'null', 'array')) THEN
                        v_problem := 'an argument without a name after a named one';
                    ELSIF v_tok IN ('num', 'str')
                            OR (v_tok = 'ident' AND v_word IN ('true', 'false', 'null')) THEN
                        v_g := CASE WHEN v_paren > 0 THEN 'pval' WHEN v_depth > 0 THEN 'anext' ELSE 'aftc' END;
                    ELSIF v_tok IN ('+', '-') THEN
                        v_g := 'sign';
                    ELSIF v_tok = 'ident' AND v_word = 'array' THEN
                        v_g := 'array';
                    ELSIF v_tok IN ('ident', 'qident') THEN -- an argument name or a type
                        v_tctx := 'lit'; v_tcount := 1; v_tmods := 0; v_tqual := false; v_tpos0 := v_tpos;
                        v_twords := CASE WHEN v_tok = 'ident' AND v_wlen <= 20 THEN v_word ELSE '?' END;
                        v_g := CASE WHEN v_g = 'arg' THEN 'aname' ELSE 'ty1' END;
                    ELSIF v_tok = ')' AND v_g = 'arg' THEN
                        v_problem := 'a missing argument';
                    ELSE
                        v_problem := c_not_const;
                    END IF;
                ELSIF v_g = 'aftc' THEN -- after an argument
                    IF v_tok = ',' THEN
                        v_g := 'arg';
                    ELSIF v_tok = ')' THEN
                        v_g := 'end';
                    ELSIF v_tok = '::' THEN
                        v_tctx := 'cast'; v_tcount := 0; v_tmods := 0; v_twords := ''; v_tqual := false; v_g := 'ty0';
                    ELSE
                        v_problem := 'an argument that is not a constant: expected , or ) after it';
                    END IF;
                ELSIF v_g = 'pval' THEN -- after a value in parentheses
                    IF v_tok = ')' THEN
                        v_paren := v_paren - 1;
                        v_g := CASE WHEN v_paren > 0 THEN 'pval' WHEN v_depth > 0 THEN 'anext' ELSE 'aftc' END;
                    ELSIF v_tok = '::' THEN
                        v_tctx := 'cast'; v_tcount := 0; v_tmods := 0; v_twords := ''; v_tqual := false; v_g := 'ty0';
                    ELSE
                        v_problem := 'an argument that is not a constant: expected :: or ) after a value in parentheses';
                    END IF;
                ELSIF v_g = 'aname' THEN
                    IF v_tok IN ('=>', ':=') THEN
                        v_g := 'const'; v_named := true;
                        -- param_name in gram.y: not a reserved or column-name keyword
                        v_kwword := nullif(v_twords, '?'); v_kwdeny := 'RC'; v_kwpos := v_tpos0;
                        v_kwwhat := 'an argument name (write it in double quotes)';
                    ELSIF v_named THEN
                        v_problem := 'an argument without a name after a named one'; v_at := v_tpos0;
                    ELSE
                        v_g := 'ty1'; v_redo := true;
                    END IF;
                ELSIF v_g = 'ty0' THEN -- a type's name, or its second part after the schema
                    IF v_tok IN ('ident', 'qident') THEN
                        IF v_tcount = 0 THEN
                            v_tpos0 := v_tpos; v_tcount := 1;
                            v_twords := CASE WHEN v_tok = 'ident' AND v_wlen <= 20 THEN v_word ELSE '?' END;
                        END IF;
                        v_g := 'ty1';
                    ELSE
                        v_problem := 'expected a type name';
                    END IF;
                ELSIF v_g IN ('ty1', 'ty2') THEN -- after a type's word(s), before (ty1) or after (ty2) its modifier
                    IF v_tok IN ('ident', 'qident') AND NOT v_tqual AND v_tcount < 5 THEN
                        v_tcount := v_tcount + 1;
                        v_twords := v_twords || ' ' || CASE WHEN v_tok = 'ident' AND v_wlen <= 20 THEN v_word ELSE '?' END;
                    ELSIF v_tok = '.' AND v_g = 'ty1' AND v_tcount = 1 AND NOT v_tqual THEN
                        -- the schema: an identifier or an unreserved keyword
                        v_kwword := nullif(v_twords, '?'); v_kwdeny := 'RCT'; v_kwpos := v_tpos0;
                        v_kwwhat := 'a schema name (write it in double quotes)';
                        v_tqual := true; v_twords := '?'; v_g := 'ty0';
                    ELSIF v_tok = '(' AND v_g = 'ty1' THEN
                        v_twords := v_twords || ' ()'; v_g := 'tymod';
                    ELSIF v_tctx = 'lit' AND v_tok = 'str' AND v_skind IN ('q', 'e', 'u', 'd') THEN
                        v_tcheck := true; v_g := CASE WHEN v_paren > 0 THEN 'pval' WHEN v_depth > 0 THEN 'anext' ELSE 'aftc' END;
                    ELSIF v_tctx = 'lit' THEN -- not a type and a string: a column, a nested call
                        v_problem := c_not_const; v_at := v_tpos0;
                    ELSIF v_tok = '[' THEN
                        v_tcheck := true; v_g := 'tyarr';
                    ELSE
                        v_tcheck := true; v_g := CASE WHEN v_paren > 0 THEN 'pval' WHEN v_depth > 0 THEN 'anext' ELSE 'aftc' END; v_redo := true;
                    END IF;
                ELSIF v_g = 'tymod' THEN
                    IF v_tok = 'num' AND v_int THEN
                        v_g := 'tymod1'; v_tmods := v_tmods + 1;
                    ELSIF v_tctx = 'lit' THEN
                        v_problem := c_not_const; v_at := v_tpos0;
                    ELSE
                        v_problem := 'a type modifier that is not an integer';
                    END IF;
                ELSIF v_g = 'tymod1' THEN
                    IF v_tok = ',' THEN
                        v_g := 'tymod';
                    ELSIF v_tok = ')' THEN
                        v_g := 'ty2';
                    ELSIF v_tctx = 'lit' THEN
                        v_problem := c_not_const; v_at := v_tpos0;
                    ELSE
                        v_problem := 'expected , or ) in a type modifier';
                    END IF;
                ELSIF v_g = 'tyarr' THEN -- after [
                    IF v_tok = ']' THEN
                        v_g := 'tyarr2';
                    ELSIF v_tok = 'num' AND v_int THEN
                        v_g := 'tyarr1';
                    ELSE
                        v_problem := 'expected ] or an integer after [';
                    END IF;
                ELSIF v_g = 'tyarr1' THEN
                    IF v_tok = ']' THEN
                        v_g := 'tyarr2';
                    ELSE
                        v_problem := 'expected ]';
                    END IF;
                ELSIF v_g = 'tyarr2' THEN
                    IF v_tok = '[' THEN
                        v_g := 'tyarr';
                    ELSE
                        v_g := CASE WHEN v_paren > 0 THEN 'pval' WHEN v_depth > 0 THEN 'anext' ELSE 'aftc' END; v_redo := true;
                    END IF;
                ELSIF v_g = 'sign' THEN
                    IF v_tok = 'num' THEN
                        v_g := CASE WHEN v_paren > 0 THEN 'pval' WHEN v_depth > 0 THEN 'anext' ELSE 'aftc' END;
                    ELSE
                        v_problem := 'a sign without a number after it';
                    END IF;
                ELSIF v_g = 'array' THEN
                    IF v_tok = '[' THEN
                        v_depth := v_depth + 1; v_g := 'array[';
                    ELSE
                        v_problem := 'ARRAY without [ after it';
                    END IF;
                ELSIF v_g = 'array[' OR v_g = 'anext' THEN
                    IF v_tok = ']' THEN
                        v_depth := v_depth - 1;
                        v_g := CASE WHEN v_paren > 0 THEN 'pval' WHEN v_depth > 0 THEN 'anext' ELSE 'aftc' END;
                    ELSIF v_g = 'array[' THEN
                        v_g := 'aconst'; v_redo := true;
                    ELSIF v_tok = ',' THEN
                        v_g := 'aconst';
                    ELSIF v_tok = '::' THEN -- a cast of an element, as in ARRAY[1, '-2'::integer]
                        v_tctx := 'cast'; v_tcount := 0; v_tmods := 0; v_twords := ''; v_tqual := false; v_g := 'ty0';
                    ELSE
                        v_problem := 'an array element that is not a constant: expected , or ] after it';
                    END IF;
                ELSIF v_g = 'name' THEN
                    IF v_tok IN ('ident', 'qident') THEN
                        v_fpos := v_tpos; v_g := 'name1';
                        v_fword := CASE WHEN v_tok = 'ident' AND v_wlen <= 20 THEN v_word END;
                    ELSE
                        v_problem := 'expected a function name';
                    END IF;
                ELSIF v_g = 'name1' OR v_g = 'name3' THEN
                    IF v_tok = '.' AND v_g = 'name1' THEN
                        v_g := 'name2';
                    ELSIF v_tok = '(' THEN
                        -- func_name in gram.y: a schema's name may not be a reserved or
                        -- type-function keyword, an unqualified function's not a reserved or
                        -- column-name keyword (those are SQL syntax of their own, as coalesce).
                        v_kwword := v_fword; v_kwpos := v_fpos;
                        IF v_g = 'name1' THEN
                            v_kwdeny := 'RC'; v_kwwhat := 'a function name (write the function with its schema)';
                        ELSE
                            v_kwdeny := 'RT'; v_kwwhat := 'a schema name (write it in double quotes)';
                        END IF;
                        v_g := 'args';
                    ELSIF v_tok = 'eof' THEN
                        v_problem := 'no argument list: write the call with parentheses, such as off_line()';
                    ELSE
                        v_problem := 'expected ( after the function name';
                    END IF;
                ELSIF v_g = 'name2' THEN
                    IF v_tok IN ('ident', 'qident') THEN
                        v_g := 'name3';
                    ELSE
                        v_problem := 'expected a function name after the dot';
                    END IF;
                ELSIF v_g = 'args' THEN -- after the call's (
                    IF v_tok = ')' THEN
                        v_g := 'end';
                    ELSE
                        v_g := 'arg'; v_redo := true;
                    END IF;
                ELSIF v_g = 'end' THEN
                    IF v_tok = 'eof' THEN
                        v_done := true;
                    ELSE
                        v_problem := 'text after the call''s closing parenthesis';
                    END IF;
                END IF;
                IF (v_kwword IS NOT NULL OR v_tcheck) AND v_kw_r IS NULL THEN
                    SELECT coalesce(array_agg(kw.word) FILTER (WHERE kw.catcode = 'R'), '{}'),
                           coalesce(array_agg(kw.word) FILTER (WHERE kw.catcode = 'C'), '{}'),
                           coalesce(array_agg(kw.word) FILTER (WHERE kw.catcode = 'T'), '{}')
                        INTO v_kw_r, v_kw_c, v_kw_t
                        FROM pg_catalog.pg_get_keywords() kw;
                END IF;
                IF v_kwword IS NOT NULL THEN
                    v_kwcat := CASE WHEN v_kwword = ANY (v_kw_r) THEN 'R' WHEN v_kwword = ANY (v_kw_c) THEN 'C'
                                    WHEN v_kwword = ANY (v_kw_t) THEN 'T' END;
                    IF strpos(v_kwdeny, v_kwcat) > 0 THEN
                        v_problem := format('the keyword %s as %s', v_kwword, v_kwwhat); v_at := v_kwpos;
                    END IF;
                    v_kwword := NULL;
                END IF;
                IF v_tcheck THEN
                    IF v_tcount > 1 THEN
                        IF NOT v_twords = ANY (CASE v_tctx WHEN 'lit' THEN c_words_any ELSE c_words_any || c_words_cast END)
                                OR v_tmods > 1 THEN
                            v_problem := 'an unknown multi-word type name, or a modifier it does not take'; v_at := v_tpos0;
                        END IF;
                    ELSIF NOT v_tqual AND v_twords NOT LIKE '?%' THEN
                        -- an unquoted type name: an identifier, an unreserved or type-function
                        -- keyword (any modifiers), or a column-name keyword that is a type
                        v_kwword := split_part(v_twords, ' ', 1);
                        v_i := array_position(c_type_keywords, v_kwword);
                        IF v_kwword = ANY (v_kw_r) OR (v_i IS NULL AND v_kwword = ANY (v_kw_c)) THEN
                            v_problem := format('the keyword %s as a type name', v_kwword); v_at := v_tpos0;
                        ELSIF v_tmods > c_type_keyword_mods[v_i] THEN
                            v_problem := format('a type modifier that %s does not take', v_kwword); v_at := v_tpos0;
                        END IF;
                        v_kwword := NULL;
                    END IF;
                    v_tcheck := false;
                END IF;
                IF v_problem IS NOT NULL THEN
                    IF v_tok = 'eof' AND v_g NOT IN ('name', 'name1', 'name3') THEN
                        v_problem := 'the call ends before its closing parenthesis';
                    END IF;
                    v_at := coalesce(v_at, v_tpos);
                    EXIT chars;
                END IF;
                EXIT token WHEN NOT v_redo;
            END LOOP;
            EXIT step WHEN NOT v_again;
        END LOOP;
    END LOOP;

    IF NOT v_done THEN
        v_at := coalesce(v_at, v_pos);
        v_from := greatest(v_at - 30, 1);
        v_excerpt := regexp_replace(substr(p_call, v_from, 60), '[[:cntrl:]]', ' ', 'g');
        IF v_from > 1 THEN
            v_excerpt := '...' || v_excerpt;
        END IF;
        IF v_from + 60 <= length(p_call) THEN
            v_excerpt := v_excerpt || '...';
        END IF;
        RAISE EXCEPTION '%: argument % (function call) is not one function call: % at character % near "%"',
                p_function, p_argno, coalesce(v_problem, 'an unexpected end'), v_at, v_excerpt
            USING ERRCODE = 'syntax_error', HINT = 'write one call such as off_line() or f(1, ''x'')';
    END IF;
    RETURN btrim(p_call, E' \t\n\r\f');
END
$fn$;
