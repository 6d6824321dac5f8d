"""The SQL of a guarded PostgreSQL ledger: roles, grants, and the functions analysts write through.

A guarded ledger (``Ledger.create(url, roles=...)``, ``ledger init URL
--roles``) has two roles. The **owner** owns the tables and the functions;
nobody logs in as it. The **analyst** role (granted to the analysts' login
roles) may SELECT the tables and EXECUTE four functions, nothing else: no
INSERT, UPDATE, DELETE or TRUNCATE. The functions run as the owner
(``SECURITY DEFINER``) and do what the Python charge path does, under the same
locks: ``pandas_dp_post`` locks the budget rows in name order, then the ledger
head; checks each budget's running state against its last entry (its hash
recomputed), a closed reservation, the exact amounts (no overspend; a return
only of what a closed reservation left unused, once); appends the entries
with their hashes chained exactly as :mod:`~pandas_dp.accounting.ledger._records`
chains them, moves the running totals and the ledger head, and appends the
head to the witness table. It also refuses params or requested text that is
not a JSON object, a requested loss other than the amount, a return to a
reservation that exists nowhere, a ledger head other than the witness table's
highest (exactly: every head is appended there), and a budget row other than
the state it last left it in (``pandas_dp_witness_budgets``).
``pandas_dp_add_budget`` appends a budget (a
reservation only when its parent holds the matching reserve entry; measure
``pure``, ``zcdp`` or ``delta``, the last for a budget's companion that holds
its delta, :data:`GUARD_MEASURES`);
``pandas_dp_set_status`` marks a charge ``ok`` or ``failed``.

The hashes are SHA-256 over the canonical JSON of :func:`_records._digest`
(``json.dumps(..., ensure_ascii=True, separators=(",", ":"))``):
``pandas_dp_json`` writes a string as Python does (``to_json`` escapes quotes,
backslashes and control characters the same way; DEL and every non-ASCII
character become ``\\uXXXX``, above U+FFFF as a surrogate pair). Exact amounts
are canonical rational text, computed with ``numeric`` integers.
"""

from __future__ import annotations

import re

from pandas_dp.errors import LedgerError

__all__ = ["WITNESS_TABLE", "DEFAULT_ROLES", "GUARD_MEASURES", "check_role", "setup_statements", "FUNCTIONS",
           "EXCEEDED", "DAMAGED", "ROLLED_BACK", "REFUSED"]

WITNESS_TABLE = "pandas_dp_witness"
#: The measures the functions accept, recorded in ``meta`` as ``guard_measures`` when the ledger is created.
#: Ledgers guarded before the ``delta`` companion budgets existed lack the key (their functions know ``pure``
#: and ``zcdp`` only), so a budget with delta is refused there before anything is written.
GUARD_MEASURES = "pure zcdp delta"
DEFAULT_ROLES = ("pandas_dp_owner", "pandas_dp_analyst")
#: SQLSTATEs the functions raise: over budget, damaged records, below the witness, a request refused.
EXCEEDED, DAMAGED, ROLLED_BACK, REFUSED = "PD001", "PD002", "PD003", "PD004"
FUNCTIONS = ("pandas_dp_post(text[], text[], text[], text[], text[], text[], text[], text[], text[])",
             "pandas_dp_add_budget(text, text, text, text)", "pandas_dp_set_status(bigint, text, text)")

_ROLE = re.compile(r"[a-z_][a-z0-9_]{0,62}")


def check_role(name: object, what: str) -> str:
    """A role name usable unquoted-equivalent (LedgerError otherwise)."""
    if not isinstance(name, str) or not _ROLE.fullmatch(name):
        raise LedgerError(f"The {what} role name must be lower-case letters, digits and underscores (up to 63, "
                          f"not starting with a digit). Got {name!r}.")
    return name


_HELPERS = r"""
CREATE FUNCTION pandas_dp_json(t text) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT AS $f$
DECLARE s text := to_json(t)::text; o text := ''; c text; cp int;
BEGIN
  IF s !~ '[^ -~]' THEN RETURN s; END IF;
  FOREACH c IN ARRAY regexp_split_to_array(s, '') LOOP
    cp := ascii(c);
    IF cp BETWEEN 32 AND 126 THEN o := o || c;
    ELSIF cp < 65536 THEN o := o || '\u' || lpad(to_hex(cp), 4, '0');
    ELSE cp := cp - 65536;
      o := o || '\u' || to_hex(55296 + (cp >> 10)) || '\u' || to_hex(56320 + (cp & 1023));
    END IF;
  END LOOP;
  RETURN o;
END $f$;

CREATE FUNCTION pandas_dp_digest(parts text[]) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT encode(sha256(convert_to('["pandas_dp ledger","1",' || array_to_string(parts, ',') || ']', 'UTF8')), 'hex')
$f$;

CREATE FUNCTION pandas_dp_entry_hash(e pandas_dp_entries) RETURNS text LANGUAGE sql STABLE AS $f$
  SELECT pandas_dp_digest(ARRAY['"entry"', e.id::text, pandas_dp_json(e.budget), e.seq::text, pandas_dp_json(e.time),
    pandas_dp_json(e.kind), pandas_dp_json(e.method), pandas_dp_json(e.columns), pandas_dp_json(e.params),
    pandas_dp_json(e.requested), pandas_dp_json(e.measure), pandas_dp_json(e.amount), pandas_dp_json(e.spent),
    pandas_dp_json(e.prev)])
$f$;

CREATE FUNCTION pandas_dp_genesis(ledger text, b pandas_dp_budgets) RETURNS text LANGUAGE sql STABLE AS $f$
  SELECT pandas_dp_digest(ARRAY['"budget"', pandas_dp_json(ledger), b.position::text, pandas_dp_json(b.name),
    pandas_dp_json(b.measure), pandas_dp_json(b.total), pandas_dp_json(b.created),
    COALESCE(pandas_dp_json(b.parent), 'null'), pandas_dp_json(b.prev)])
$f$;

CREATE FUNCTION pandas_dp_q(t text) RETURNS numeric[] LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE n numeric; d numeric := 1;
BEGIN
  IF t IS NULL OR length(t) > 2000 OR t !~ '^-?[0-9]+(/[0-9]+)?$' THEN RETURN NULL; END IF;
  n := split_part(t, '/', 1)::numeric;
  IF position('/' in t) > 0 THEN d := split_part(t, '/', 2)::numeric; END IF;
  IF d <= 0 OR pandas_dp_q_text(n, d) <> t THEN RETURN NULL; END IF;
  RETURN ARRAY[n, d];
END $f$;

CREATE FUNCTION pandas_dp_q_text(n numeric, d numeric) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT AS $f$
DECLARE g numeric := gcd(n, d);
BEGIN
  IF d < 0 THEN g := -g; END IF;
  n := div(n, g); d := div(d, g);
  IF d = 1 THEN RETURN n::text; END IF;
  RETURN n::text || '/' || d::text;
END $f$;

CREATE FUNCTION pandas_dp_q_add(a numeric[], b numeric[]) RETURNS numeric[] LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT pandas_dp_q(pandas_dp_q_text(a[1] * b[2] + b[1] * a[2], a[2] * b[2]))
$f$;

CREATE FUNCTION pandas_dp_q_as(a numeric[], from_measure text, to_measure text) RETURNS numeric[]
LANGUAGE sql IMMUTABLE STRICT AS $f$
  SELECT CASE WHEN from_measure = to_measure THEN a
              WHEN from_measure = 'pure' AND to_measure = 'zcdp'
                THEN pandas_dp_q(pandas_dp_q_text(a[1] * a[1], 2 * a[2] * a[2]))
         END
$f$;

CREATE FUNCTION pandas_dp_now() RETURNS text LANGUAGE sql VOLATILE AS $f$
  SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')
$f$;

CREATE FUNCTION pandas_dp_fail(code text, msg text, detail text DEFAULT '') RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  RAISE EXCEPTION USING ERRCODE = code, MESSAGE = msg, DETAIL = detail;
END $f$;

CREATE FUNCTION pandas_dp_json_object(t text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE j jsonb;
BEGIN
  IF t IS NULL OR length(t) > 100000 THEN RETURN NULL; END IF;
  j := t::jsonb;
  IF jsonb_typeof(j) <> 'object' THEN RETURN NULL; END IF;
  RETURN j;
EXCEPTION WHEN others THEN
  RETURN NULL;
END $f$;

CREATE FUNCTION pandas_dp_reserved(b text, r text) RETURNS SETOF pandas_dp_entries LANGUAGE sql STABLE AS $f$
  SELECT * FROM pandas_dp_entries e WHERE e.budget = b AND e.kind IN ('reserve', 'return')
    AND (CASE WHEN e.params ~ '^\s*\{' THEN e.params::jsonb ->> 'reservation' END) = r ORDER BY e.seq
$f$;
"""

_POST = r"""
CREATE FUNCTION pandas_dp_post(p_budget text[], p_kind text[], p_method text[], p_columns text[], p_params text[],
    p_requested text[], p_amount text[], p_status text[], p_genesis text[])
RETURNS TABLE (entry_id bigint, entry_hash text, head_entries bigint, head_hash text)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {schema}, pg_temp AS $f$
DECLARE
  v_ledger text; v_count bigint; v_head text; w record; b pandas_dp_budgets; last pandas_dp_entries;
  e pandas_dp_entries; sub pandas_dp_budgets; v_name text; i int; n int := coalesce(array_length(p_budget, 1), 0);
  v_amount numeric[]; v_spent numeric[]; v_total numeric[]; v_stamp text := pandas_dp_now(); v_res text;
  v_reserve numeric[]; v_used numeric[]; v_ids bigint[] := '{{}}'; v_hashes text[] := '{{}}'; v_par jsonb;
  v_req jsonb; v_asked numeric[]; v_state record;
BEGIN
  IF n = 0 OR array_length(p_kind, 1) IS DISTINCT FROM n OR array_length(p_method, 1) IS DISTINCT FROM n
     OR array_length(p_columns, 1) IS DISTINCT FROM n OR array_length(p_params, 1) IS DISTINCT FROM n
     OR array_length(p_requested, 1) IS DISTINCT FROM n OR array_length(p_amount, 1) IS DISTINCT FROM n
     OR array_length(p_status, 1) IS DISTINCT FROM n OR array_length(p_genesis, 1) IS DISTINCT FROM n THEN
    PERFORM pandas_dp_fail('{refused}', 'the postings are not arrays of one length');
  END IF;
  FOR v_name IN SELECT DISTINCT x COLLATE "C" FROM unnest(p_budget) u(x) ORDER BY 1 LOOP  -- one order: no deadlock
    SELECT * INTO b FROM pandas_dp_budgets WHERE name = v_name FOR UPDATE;
    IF NOT FOUND THEN PERFORM pandas_dp_fail('{damaged}', format('the budget %L disappeared', v_name)); END IF;
  END LOOP;
  PERFORM 1 FROM pandas_dp_meta WHERE key = 'format' FOR UPDATE;  -- the ledger head, after the budget rows
  SELECT value INTO v_ledger FROM pandas_dp_meta WHERE key = 'ledger_id';
  SELECT value::bigint INTO v_count FROM pandas_dp_meta WHERE key = 'entries';
  SELECT value INTO v_head FROM pandas_dp_meta WHERE key = 'entries_head';
  IF v_ledger IS NULL OR v_count IS NULL OR v_head IS NULL THEN
    PERFORM pandas_dp_fail('{damaged}', 'its ledger head (entries, entries_head) is missing');
  END IF;
  SELECT entries, head INTO w FROM {witness} ORDER BY entries DESC LIMIT 1;
  IF NOT FOUND THEN PERFORM pandas_dp_fail('{rolled_back}', 'holds no head'); END IF;
  -- Every head the ledger reaches is appended here in its charge's transaction: the ledger's head is the
  -- witness's highest, exactly. Below it, an older copy was put back; beyond it or beside it, the tables were
  -- written around these functions (an older copy padded past the witness, a rewritten chain).
  IF v_count <> w.entries OR v_head <> w.head THEN
    PERFORM pandas_dp_fail('{rolled_back}', CASE WHEN v_count < w.entries THEN 'below' ELSE 'not extended' END,
                           w.entries || ':' || w.head);
  END IF;
  FOR i IN 1 .. n LOOP
    SELECT * INTO b FROM pandas_dp_budgets WHERE name = p_budget[i];
    IF p_genesis[i] <> '' AND p_genesis[i] <> b.genesis THEN
      PERFORM pandas_dp_fail('{refused}', 'genesis', p_budget[i]);
    END IF;
    IF b.genesis <> pandas_dp_genesis(v_ledger, b) THEN
      PERFORM pandas_dp_fail('{damaged}', format('budget %L does not match its hash (its definition was changed)',
                                              b.name));
    END IF;
    v_total := pandas_dp_q(b.total);
    v_spent := pandas_dp_q(b.spent);
    SELECT * INTO last FROM pandas_dp_entries WHERE budget = b.name ORDER BY seq DESC LIMIT 1;
    IF v_total IS NULL OR v_spent IS NULL OR v_total[1] <= 0 OR (last.id IS NULL AND NOT (
         b.entries = 0 AND b.head = b.genesis AND v_spent[1] = 0))
       OR (last.id IS NOT NULL AND NOT (last.seq = b.entries AND last.hash = b.head AND last.spent = b.spent
                                        AND last.hash = pandas_dp_entry_hash(last))) THEN
      PERFORM pandas_dp_fail('{damaged}', format('the running state of budget %L does not match its last entry',
                                              b.name));
    END IF;
    -- The budget's state at the ledger head, as these functions last wrote it: a budget whose last entries were
    -- deleted and whose row was set back to an earlier entry differs.
    SELECT entries, head INTO v_state FROM {witness}_budgets WHERE budget = b.name;
    IF (v_state.entries IS NULL AND b.entries <> 0) OR (v_state.entries IS NOT NULL AND (
         v_state.entries <> b.entries OR v_state.head <> b.head)) THEN
      PERFORM pandas_dp_fail('{damaged}', format('the budget %L records %s entries but the ledger''s functions last '
                                              'left it at %s: entries of it were deleted or its row was set back',
                                              b.name, b.entries, coalesce(v_state.entries, 0)));
    END IF;
    IF last.kind = 'close' THEN PERFORM pandas_dp_fail('{refused}', 'closed', b.name); END IF;
    v_amount := pandas_dp_q(p_amount[i]);
    IF v_amount IS NULL OR p_kind[i] IS NULL OR NOT (
         (p_kind[i] = 'charge' AND v_amount[1] > 0 AND p_status[i] = 'charged')
      OR (p_kind[i] = 'reserve' AND v_amount[1] > 0 AND p_status[i] = 'reserved')
      OR (p_kind[i] = 'close' AND v_amount[1] = 0 AND p_status[i] = 'closed')
      OR (p_kind[i] = 'return' AND v_amount[1] < 0 AND p_status[i] = 'returned')) THEN
      PERFORM pandas_dp_fail('{refused}', format('a %s entry of amount %s and status %s is not allowed',
                                              p_kind[i], p_amount[i], p_status[i]));
    END IF;
    -- What an entry records: params and requested are JSON objects, and the loss requested is the amount
    -- charged (in the budget's measure; a delta budget charges the requested delta; a return gives back the
    -- amount it names).
    v_par := pandas_dp_json_object(p_params[i]);
    v_req := pandas_dp_json_object(p_requested[i]);
    IF v_par IS NULL OR v_req IS NULL THEN
      PERFORM pandas_dp_fail('{refused}', 'the params and requested of an entry must be JSON objects');
    END IF;
    IF b.measure = 'delta' THEN
      v_asked := pandas_dp_q(v_req ->> 'delta');
    ELSE
      v_asked := pandas_dp_q_as(pandas_dp_q(v_req ->> CASE v_req ->> 'measure' WHEN 'pure' THEN 'epsilon'
                                                                             WHEN 'zcdp' THEN 'rho' END),
                                v_req ->> 'measure', b.measure);
    END IF;
    IF v_asked IS NULL OR v_asked IS DISTINCT FROM (CASE WHEN p_kind[i] = 'return'
                                                         THEN ARRAY[-v_amount[1], v_amount[2]] ELSE v_amount END) THEN
      PERFORM pandas_dp_fail('{refused}', format('the loss requested (%s) is not the amount %s charged to budget %L',
                                              left(p_requested[i], 200), p_amount[i], b.name));
    END IF;
    v_res := v_par ->> 'reservation';
    IF p_kind[i] IN ('reserve', 'return', 'close') AND v_res IS NULL THEN
      PERFORM pandas_dp_fail('{refused}', format('a %s entry must name its reservation', p_kind[i]));
    END IF;
    IF p_kind[i] = 'reserve' AND (EXISTS (SELECT 1 FROM pandas_dp_budgets WHERE name = v_res)
                                  OR EXISTS (SELECT 1 FROM pandas_dp_reserved(b.name, v_res))) THEN
      PERFORM pandas_dp_fail('{refused}', format('the reservation %L exists already', v_res));
    END IF;
    IF p_kind[i] = 'close' AND (v_res <> b.name OR b.parent IS NULL) THEN
      PERFORM pandas_dp_fail('{refused}', 'only a reservation is closed, by a close entry naming it');
    END IF;
    IF p_kind[i] = 'return' THEN
      -- Exactly one reserve for it and no return yet; never more than was reserved; exactly the unused part
      -- when the reservation is in this ledger (it must be closed).
      SELECT array_agg(pandas_dp_q(r.amount) ORDER BY r.seq) INTO v_reserve FROM pandas_dp_reserved(b.name, v_res) r;
      IF (SELECT count(*) FROM pandas_dp_reserved(b.name, v_res) r WHERE r.kind = 'reserve') <> 1
         OR (SELECT count(*) FROM pandas_dp_reserved(b.name, v_res) r WHERE r.kind = 'return') <> 0
         OR -v_amount[1] * v_reserve[1][2] > v_reserve[1][1] * v_amount[2] THEN
        PERFORM pandas_dp_fail('{refused}', format('a return to budget %L of more than reservation %L holds',
                                                b.name, v_res));
      END IF;
      SELECT * INTO sub FROM pandas_dp_budgets WHERE name = v_res;
      IF sub.name IS NULL AND NOT EXISTS (SELECT 1 FROM pandas_dp_reserved(b.name, v_res) r
          WHERE r.kind = 'reserve' AND pandas_dp_json_object(r.params) ? 'reservation_ledger') THEN
        -- A reservation lives in the ledger of the budget it was made from; another ledger's reserve entry
        -- names that ledger. A return to a reservation that exists nowhere is refused.
        PERFORM pandas_dp_fail('{refused}', format('the reservation %L does not exist', v_res));
      END IF;
      IF sub.name IS NOT NULL THEN
        IF NOT EXISTS (SELECT 1 FROM pandas_dp_entries WHERE budget = sub.name AND kind = 'close') THEN
          PERFORM pandas_dp_fail('{refused}', format('the reservation %L is not closed', v_res));
        END IF;
        v_used := pandas_dp_q_add(pandas_dp_q_as(pandas_dp_q(sub.spent), sub.measure, b.measure),
                                  ARRAY[-v_reserve[1][1], v_reserve[1][2]]);
        IF v_used IS NULL OR v_used <> v_amount THEN
          PERFORM pandas_dp_fail('{refused}', format('a return to budget %L other than what reservation %L left',
                                                  b.name, v_res));
        END IF;
      END IF;
    END IF;
    v_spent := pandas_dp_q_add(v_spent, v_amount);
    IF v_amount[1] > 0 AND v_spent[1] * v_total[2] > v_total[1] * v_spent[2] THEN
      PERFORM pandas_dp_fail('{exceeded}', 'exceeded', b.name || '|' || b.total || '|' || b.spent);
    END IF;
    e.id := nextval(pg_get_serial_sequence('pandas_dp_entries', 'id'));
    e.budget := b.name; e.seq := b.entries + 1; e.time := v_stamp; e.kind := p_kind[i];
    e.method := p_method[i]; e.columns := p_columns[i]; e.params := p_params[i]; e.requested := p_requested[i];
    e.measure := b.measure; e.amount := p_amount[i]; e.spent := pandas_dp_q_text(v_spent[1], v_spent[2]);
    e.prev := b.head; e.status := p_status[i];
    e.hash := pandas_dp_entry_hash(e);
    INSERT INTO pandas_dp_entries SELECT e.*;
    UPDATE pandas_dp_budgets SET spent = e.spent, entries = e.seq, head = e.hash WHERE name = b.name;
    INSERT INTO {witness}_budgets (budget, entries, head) VALUES (b.name, e.seq, e.hash)
      ON CONFLICT (budget) DO UPDATE SET entries = excluded.entries, head = excluded.head;
    v_count := v_count + 1;
    v_head := pandas_dp_digest(ARRAY['"head"', pandas_dp_json(v_ledger), v_count::text, pandas_dp_json(v_head),
                                     pandas_dp_json(e.hash)]);
    v_ids := v_ids || e.id; v_hashes := v_hashes || e.hash;
  END LOOP;
  UPDATE pandas_dp_meta SET value = v_count::text WHERE key = 'entries';
  UPDATE pandas_dp_meta SET value = v_head WHERE key = 'entries_head';
  INSERT INTO {witness} (entries, head) VALUES (v_count, v_head);
  FOR i IN 1 .. n LOOP
    entry_id := v_ids[i]; entry_hash := v_hashes[i]; head_entries := v_count; head_hash := v_head;
    RETURN NEXT;
  END LOOP;
END $f$;

CREATE FUNCTION pandas_dp_add_budget(p_name text, p_measure text, p_total text, p_parent text)
RETURNS SETOF pandas_dp_budgets
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {schema}, pg_temp AS $f$
DECLARE
  v_ledger text; v_count bigint; v_prev text; b pandas_dp_budgets; p pandas_dp_budgets; v_total numeric[];
  v_reserve numeric[];
BEGIN
  PERFORM 1 FROM pandas_dp_meta WHERE key = 'budgets_head' FOR UPDATE;
  SELECT * INTO b FROM pandas_dp_budgets WHERE name = p_name;
  IF FOUND THEN RETURN NEXT b; RETURN; END IF;  -- another session made it meanwhile: the caller compares
  v_total := pandas_dp_q(p_total);
  IF p_name IS NULL OR length(p_name) > 2000 OR p_measure NOT IN ('pure', 'zcdp', 'delta') OR v_total IS NULL
     OR v_total[1] <= 0 THEN
    PERFORM pandas_dp_fail('{refused}', 'a budget needs a name, a measure and a positive exact total');
  END IF;
  IF p_parent IS NOT NULL THEN
    SELECT * INTO p FROM pandas_dp_budgets WHERE name = p_parent;
    SELECT array_agg(pandas_dp_q(r.amount)) INTO v_reserve FROM pandas_dp_reserved(p_parent, p_name) r;
    IF p.name IS NULL OR v_reserve IS NULL OR array_length(v_reserve, 1) <> 1
       OR pandas_dp_q_as(v_total, p_measure, p.measure) IS DISTINCT FROM ARRAY[v_reserve[1][1], v_reserve[1][2]] THEN
      PERFORM pandas_dp_fail('{refused}', format('the reservation %L has no matching reserve entry in %L',
                                              p_name, p_parent));
    END IF;
  END IF;
  SELECT value INTO v_ledger FROM pandas_dp_meta WHERE key = 'ledger_id';
  SELECT value::bigint INTO v_count FROM pandas_dp_meta WHERE key = 'budgets';
  SELECT value INTO v_prev FROM pandas_dp_meta WHERE key = 'budgets_head';
  b.name := p_name; b.position := v_count + 1; b.measure := p_measure; b.total := p_total;
  b.created := pandas_dp_now(); b.parent := p_parent; b.prev := v_prev; b.spent := '0'; b.entries := 0;
  b.genesis := pandas_dp_genesis(v_ledger, b);
  b.head := b.genesis;
  INSERT INTO pandas_dp_budgets SELECT b.*;
  UPDATE pandas_dp_meta SET value = b.position::text WHERE key = 'budgets';
  UPDATE pandas_dp_meta SET value = b.genesis WHERE key = 'budgets_head';
  RETURN NEXT b;
END $f$;

CREATE FUNCTION pandas_dp_set_status(p_id bigint, p_status text, p_expected text) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER SET search_path = {schema}, pg_temp AS $f$
BEGIN
  IF p_expected IS DISTINCT FROM 'charged' OR p_status NOT IN ('ok', 'failed') THEN
    PERFORM pandas_dp_fail('{refused}', 'only a charge''s status goes from charged to ok or failed');
  END IF;
  UPDATE pandas_dp_entries SET status = p_status WHERE id = p_id AND status = 'charged' AND kind = 'charge';
END $f$;
"""


def _split(script: str) -> list[str]:
    """Statements of a script whose function bodies are quoted with ``$f$``."""
    out, current = [], []
    inside = False
    for line in script.splitlines():
        current.append(line)
        inside ^= line.count("$f$") % 2 == 1
        if not inside and line.rstrip().endswith(";"):
            text = "\n".join(current).strip()
            if text.strip(";").strip():
                out.append(text.rstrip(";"))
            current = []
    tail = "\n".join(current).strip()
    if tail:
        out.append(tail)
    return out


def setup_statements(schema: str, owner: str, analyst: str, tables: list[str]) -> list[str]:
    """Every statement of the setup, in order (run in one transaction by a role that may create roles).

    ``schema`` is the quoted schema the tables go in; ``tables`` the ``CREATE TABLE`` statements of the
    ledger. The caller then sets ``meta`` as the owner and runs :func:`grant_statements`.
    """
    owner_q, analyst_q = f'"{check_role(owner, "owner")}"', f'"{check_role(analyst, "analyst")}"'
    make = ("DO $f$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{r}') THEN "
            "CREATE ROLE \"{r}\" NOLOGIN; END IF; END $f$")
    fill = dict(schema=schema, witness=WITNESS_TABLE, exceeded=EXCEEDED, damaged=DAMAGED,
                rolled_back=ROLLED_BACK, refused=REFUSED)
    return [
        make.format(r=owner), make.format(r=analyst),
        f"GRANT {owner_q} TO CURRENT_USER",
        f"GRANT USAGE, CREATE ON SCHEMA {schema} TO {owner_q}",
        f"GRANT USAGE ON SCHEMA {schema} TO {analyst_q}",
        f"SET LOCAL ROLE {owner_q}",
        *tables,
        f"CREATE TABLE {WITNESS_TABLE} (entries BIGINT PRIMARY KEY, head TEXT NOT NULL, "
        f"recorded TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())",
        f"CREATE TABLE {WITNESS_TABLE}_budgets (budget TEXT PRIMARY KEY, entries BIGINT NOT NULL, head TEXT NOT NULL)",
        "CREATE INDEX pandas_dp_entries_reservations ON pandas_dp_entries (budget) "
        "WHERE kind IN ('reserve', 'return')",
        *_split(_HELPERS),
        *_split(_POST.format(**fill)),
    ]


def grant_statements(owner: str, analyst: str, tables: list[str]) -> list[str]:
    """Analysts read every table and write only through the functions."""
    analyst_q = f'"{check_role(analyst, "analyst")}"'
    names = ", ".join([*tables, WITNESS_TABLE, f"{WITNESS_TABLE}_budgets"])
    out = [f"REVOKE ALL ON {names} FROM PUBLIC", f"REVOKE ALL ON {names} FROM {analyst_q}",
           f"GRANT SELECT ON {names} TO {analyst_q}"]
    for fn in FUNCTIONS:
        out += [f"REVOKE ALL ON FUNCTION {fn} FROM PUBLIC", f"GRANT EXECUTE ON FUNCTION {fn} TO {analyst_q}"]
    out.append("RESET ROLE")
    return out
