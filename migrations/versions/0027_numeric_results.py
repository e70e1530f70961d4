"""A rendered SUM (``server.executors.sql.render``, design note 153) computes
its value inside the statement and looks its term up in the dictionary by
datatype and lexical form, as counts are (0017): an index of the decimal,
float and double literals; ``pv_decimal_div`` and ``pv_double_div``, an
average's division as Python's decimals (28 significant digits, ties to
even) and doubles (an underflow is zero, not an error) divide;
``pv_decimal_lexical``, a decimal written as
``views.terms.make_numeric`` writes it (no trailing zero, ``.0`` on a whole
number); ``pv_double_scaled``, a double's exact value times 2^1074 (an
integer: its bits read); ``pv_double_sum``, the double nearest to a sum
computed exactly (``views.aggregates.nearest_double``); and
``pv_double_lexical``, a double written as
``views.terms.make_numeric`` writes it (Python's shortest round-trip form,
``E`` for the exponent, fixed notation for exponents -4 to 15, ``.0`` on a
whole number, ``INF``, ``-INF``, ``NaN``), from Postgres's own shortest
round-trip output (``extra_float_digits = 1``): the same digits, laid out
again.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-26 23:00:00
"""

from __future__ import annotations

from alembic import op

revision = '0027'
down_revision = '0026'
branch_labels = None
depends_on = None

XSD = "http://www.w3.org/2001/XMLSchema#"
NUMBERS = ", ".join(f"'{XSD}{t}'" for t in ("decimal", "float", "double"))

DOUBLE_LEXICAL = r"""
CREATE OR REPLACE FUNCTION pv_double_lexical(x float8) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT SET extra_float_digits = 1 AS $$
DECLARE
    m text[];
    digits text;
    point int;  -- where the decimal point falls after the first digit's place 0
    e int;
    shorter text;
BEGIN
    IF x = 'NaN'::float8 THEN RETURN 'NaN'; END IF;
    IF x = 'Infinity'::float8 THEN RETURN 'INF'; END IF;
    IF x = '-Infinity'::float8 THEN RETURN '-INF'; END IF;
    m := regexp_match(x::text, '^(-?)([0-9]+)(\.([0-9]+))?(e([+-]?[0-9]+))?$');
    digits := m[2] || coalesce(m[4], '');
    point := length(m[2]) + coalesce(m[6]::int, 0);
    WHILE length(digits) > 1 AND left(digits, 1) = '0' LOOP
        digits := substr(digits, 2);
        point := point - 1;
    END LOOP;
    digits := rtrim(digits, '0');
    IF digits = '' THEN
        RETURN m[1] || '0.0';
    END IF;
    -- Postgres writes some whole numbers past 2^53 with more digits than they need
    FOR n IN 1 .. CASE WHEN abs(x) < 1e300 THEN length(digits) - 1 ELSE 0 END LOOP
        shorter := rtrim(round(digits::numeric / 10::numeric ^ (length(digits) - n))::text, '0');
        IF (m[1] || '0.' || shorter || 'e' || point)::float8 = x THEN
            point := point + length(shorter) - n;  -- a carry (9.99… to 10) moves the point
            digits := shorter;
            EXIT;
        END IF;
    END LOOP;
    e := point - 1;
    IF e >= -4 AND e < 16 THEN
        IF point <= 0 THEN
            RETURN m[1] || '0.' || repeat('0', -point) || digits;
        ELSIF point >= length(digits) THEN
            RETURN m[1] || digits || repeat('0', point - length(digits)) || '.0';
        END IF;
        RETURN m[1] || left(digits, point) || '.' || substr(digits, point + 1);
    END IF;
    RETURN m[1] || left(digits, 1)
        || CASE WHEN length(digits) > 1 THEN '.' || substr(digits, 2) ELSE '' END
        || 'E' || CASE WHEN e < 0 THEN '-' ELSE '+' END
        || CASE WHEN abs(e) < 10 THEN '0' ELSE '' END || abs(e)::text;
END
$$
"""


# 2^1024 - 2^970, times 10^1074 (the sum's scale in pv_double_sum): a sum at or past
# it rounds to an infinite double (round half to even)
ROUNDS_TO_INFINITY = (2 ** 1024 - 2 ** 970) * 10 ** 1074

OTHERS = rf"""
CREATE OR REPLACE FUNCTION pv_decimal_lexical(x numeric) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT trim_scale(x)::text || CASE WHEN scale(trim_scale(x)) = 0 THEN '.0' ELSE '' END
$$;
CREATE OR REPLACE FUNCTION pv_double_scaled(x float8) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT AS $$
    SELECT CASE WHEN b < 0 THEN -1 ELSE 1 END
        * (CASE WHEN e = 0 THEN f ELSE f + 4503599627370496 END)::numeric
        * power(2::numeric, greatest(e - 1, 0))
    FROM (SELECT b, b & 4503599627370495 AS f, (b >> 52) & 2047 AS e
          FROM (SELECT ('x' || encode(float8send(x), 'hex'))::bit(64)::bigint AS b) AS bits) AS p
$$;
CREATE OR REPLACE FUNCTION pv_double_sum(nans numeric, pinf numeric, ninf numeric,
                                         exact numeric, scaled numeric) RETURNS float8
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN nans > 0 OR (pinf > 0 AND ninf > 0) THEN 'NaN'::float8
                WHEN pinf > 0 THEN 'Infinity'::float8
                WHEN ninf > 0 THEN '-Infinity'::float8
                WHEN s = 0 THEN 0::float8
                WHEN abs(s) >= {ROUNDS_TO_INFINITY}
                THEN CASE WHEN s > 0 THEN 'Infinity'::float8 ELSE '-Infinity'::float8 END
                ELSE (s::text || 'e-1074')::float8 END
    FROM (SELECT (coalesce(exact, 0) * power(2::numeric, 1074) + coalesce(scaled, 0))
                 * power(5::numeric, 1074) AS s) AS x
$$;
CREATE OR REPLACE FUNCTION pv_double_div(s float8, n float8) RETURNS float8
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    IF s = 0 OR abs(s) >= 1e-290 THEN  -- infinities and NaN too; no subtransaction
        RETURN s / n;
    END IF;
    BEGIN
        RETURN s / n;
    EXCEPTION WHEN numeric_value_out_of_range THEN  -- underflow: Python's doubles go to zero
        RETURN CASE WHEN s < 0 THEN '-0'::float8 ELSE 0::float8 END;
    END;
END
$$;
CREATE OR REPLACE FUNCTION pv_decimal_div(x numeric, n numeric) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
    q numeric;
    a numeric;
    e int;
    t int;
    low numeric;
BEGIN
    IF x = 0 THEN
        RETURN 0;
    END IF;
    -- the quotient with some 40 digits past the 28 kept (Postgres rounds it there)
    e := length(trunc(abs(x))::text) - length(trunc(abs(n))::text);
    q := round(x, least(1000, greatest(0, 40 - e + scale(x)))) / n;
    a := abs(q);
    IF a >= 1 THEN
        e := length(trunc(a)::text) - 1;
    ELSE
        e := -(length(substring(a::text from '^0\.(0*)')) + 1);
    END IF;
    t := 27 - e;
    low := trunc(q, t);
    IF abs(q - low) * 10::numeric ^ t = 0.5 AND q * n = x
            AND mod(abs(low) * 10::numeric ^ t, 2) = 0 THEN
        RETURN low;  -- an exact tie goes to the even digit (Python's default context)
    END IF;
    RETURN round(q, t);
END
$$
"""


def upgrade() -> None:
    op.execute(DOUBLE_LEXICAL)
    op.execute(OTHERS)
    op.execute("CREATE INDEX IF NOT EXISTS ix_terms_number_lexical ON terms (datatype, lexical) "
               f"WHERE kind = 2 AND datatype IN ({NUMBERS})")


def downgrade() -> None:
    op.execute("DROP INDEX IF EXISTS ix_terms_number_lexical")
    op.execute("DROP FUNCTION IF EXISTS pv_double_lexical(float8)")
    op.execute("DROP FUNCTION IF EXISTS pv_decimal_lexical(numeric)")
    op.execute("DROP FUNCTION IF EXISTS pv_double_sum(numeric, numeric, numeric, numeric, "
               "numeric)")
    op.execute("DROP FUNCTION IF EXISTS pv_double_scaled(float8)")
    op.execute("DROP FUNCTION IF EXISTS pv_double_div(float8, float8)")
    op.execute("DROP FUNCTION IF EXISTS pv_decimal_div(numeric, numeric)")
