"""The report facts stored with every report (Migrations/0096: app.report_facts, written by
a BEFORE trigger where 0031 and 0050 had generated columns): what each is for documents of
every shape the schema lets through to SQL, and that they keep a generated column's
guarantees — computed from the document on every insert and update, whatever a statement
writes into them, and the fixed values of a tombstone. Each test writes in a transaction
it rolls back."""
import json
import uuid

import pytest


FACTS = ("boarded_at", "vessel_key", "permit_key", "captain_key", "nationality_key", "violation_count",
         "warnings", "citations", "dispositions", "violation_codes", "species", "catch_species", "catch_kg")


@pytest.fixture
def cur(rolled_back_cursor):
    return rolled_back_cursor


def partition(cur):
    cur.execute("select 'agency=' || key from app.agencies order by key limit 1")
    return cur.fetchone()[0]


def insert(cur, doc):
    report_id = "facts-" + uuid.uuid4().hex
    cur.execute("insert into sync.reports (id, partition, doc, seq) values (%s, %s, %s, 0)",
                (report_id, partition(cur), json.dumps(doc)))
    return report_id


def facts(cur, report_id):
    cur.execute(f"select {', '.join(FACTS)}, search::text from sync.reports where id = %s", (report_id,))
    return dict(zip(FACTS + ("search",), cur.fetchone()))


def test_facts_of_a_report(cur):
    got = facts(cur, insert(cur, {
        "date": "2024-03-05T10:00:00+02:00", "timestamp": "2024-03-06T00:00:00Z",
        "vessel": {"name": "Ōcean Stár", "permitNumber": "CR-2023-01234", "nationality": "Côte d'Ivoire"},
        "captain": {"name": "José Núñez", "license": "L/1"},
        "crew": [{"name": "Ana"}, {"license": "K9"}, "not an object"],
        "inspection": {
            "summary": {"violations": [
                {"disposition": "Warning", "offence": {"code": "B-12", "explanation": "Nets"}},
                {"disposition": "Citation", "offence": {"code": ""}, "crewMember": {"name": "Ægir"}},
                {"disposition": "", "offence": {"code": "X-1"}},
                {"disposition": "Citation"},
            ]},
            "actualCatch": [
                {"fish": "Tuna", "weight": 10, "unit": "lbs"}, {"fish": "Cod", "weight": 2},
                {"fish": "Tuna", "weight": 1}, {"fish": "", "weight": 3}, {"fish": "Bass", "weight": "4"},
            ]},
        "notes": [{"note": "Straße"}, {"other": 1}],
    }))
    assert got["boarded_at"].isoformat() == "2024-03-05T08:00:00+00:00"
    assert (got["vessel_key"], got["permit_key"], got["captain_key"], got["nationality_key"]) == \
        ("ocean star", "cr-2023-01234", "jose nunez", "cote d'ivoire")
    assert (got["violation_count"], got["warnings"], got["citations"]) == (3, 1, 2)
    assert got["dispositions"] == ["Citation", "Warning"]
    assert got["violation_codes"] == ["B-12", "(no code)", "(no code)"]
    # every named fish, sorted and distinct; weights only of named fish with a numeric weight
    assert got["species"] == ["", "Bass", "Cod", "Tuna"]
    assert got["catch_species"] == ["Cod", "Tuna"]
    assert got["catch_kg"] == [2.0, 10 * 0.45359237 + 1]
    words = {w.split(":")[0].strip("'") for w in got["search"].split()}
    assert {"ocean", "star", "cr", "2023", "01234", "jose", "nunez", "l", "1", "ana", "k9", "b", "12", "nets",
            "aegir", "x", "strasse"} <= words


def test_documents_without_the_arrays(cur):
    for doc in ({}, {"crew": {"name": "no"}, "notes": "text", "inspection": {"summary": {"violations": {"disposition": "Warning"}},
                                                                          "actualCatch": 5}},
                {"date": "not a date", "timestamp": "2024-01-01T00:00:00Z"}):
        got = facts(cur, insert(cur, doc))
        assert (got["violation_count"], got["warnings"], got["citations"]) == (0, 0, 0)
        assert got["dispositions"] == got["violation_codes"] == got["species"] == got["catch_species"] == []
        assert got["catch_kg"] == []
        assert got["vessel_key"] == got["permit_key"] == got["captain_key"] == got["nationality_key"] == ""
    assert got["boarded_at"].isoformat() == "2024-01-01T00:00:00+00:00"


# Since 0108 an INSERT that writes `search` is trusted with every fact, as app.insert_documents
# is (the sync path's writer of reports); one that does not, whoever runs it, gets the
# trigger's facts whatever it wrote, and every update recomputes them. This test and
# test_a_statement_cannot_set_the_plain_expression_facts forge facts on updates and on inserts
# that leave `search` out: the boundary 0108 draws.
def test_a_statement_cannot_set_the_facts_and_updates_recompute_them(cur):
    report_id = insert(cur, {"vessel": {"name": "Alpha"}, "inspection": {"summary": {"violations": [{"disposition": "Warning"}]}}})
    cur.execute("update sync.reports set vessel_key = 'forged', violation_count = 99, search = 'forged'::tsvector "
                "where id = %s", (report_id,))
    got = facts(cur, report_id)
    assert (got["vessel_key"], got["violation_count"]) == ("alpha", 1)
    assert "forged" not in got["search"]
    cur.execute("update sync.reports set doc = %s where id = %s", (json.dumps({"vessel": {"name": "Bravo"}}), report_id))
    got = facts(cur, report_id)
    assert (got["vessel_key"], got["violation_count"], got["warnings"]) == ("bravo", 0, 0)
    cur.execute("insert into sync.reports (id, partition, doc, seq, vessel_key, warnings) values (%s, %s, %s, 0, 'forged', 7)",
                ("facts-" + uuid.uuid4().hex, partition(cur), json.dumps({"vessel": {"name": "Charlie"}})))
    cur.execute("select vessel_key, warnings from sync.reports where vessel_key in ('forged', 'charlie')")
    assert cur.fetchall() == [("charlie", 0)]


def test_a_tombstone(cur):
    report_id = insert(cur, {"vessel": {"name": "Delta"}, "inspection": {"actualCatch": [{"fish": "Cod", "weight": 1}]}})
    cur.execute("update sync.reports set deleted = true, doc = null where id = %s", (report_id,))
    got = facts(cur, report_id)
    assert got["boarded_at"].isoformat() == "1970-01-01T00:00:00+00:00"
    assert (got["vessel_key"], got["violation_count"], got["catch_species"], got["catch_kg"], got["search"]) == \
        ("", 0, [], [], "")


# Texts the parser could read otherwise than as runs of letters and digits (Migrations/0098):
# codes, addresses, numbers, other scripts and digits, ligatures, combining marks, words at
# and over the parser's 2,047-byte limit, and a text long enough to take the parser's branch.
SEARCH_TEXTS = (
    "CR-2023-01234 ec-cap-56008 27.80(a)(2) 7145(a) v1.2.3 -12 +3 1e5 0x1F 3,5 1/2 ½ ² №5",
    "6e9bc0c3 400E908d 1e23e4 12e5x ab6e9cd 6ebc 7e",
    "ana@example.org https://x.example/a_b?c=d host.example.com /usr/lib a_b ~x &amp; <b>bold</b>",
    "Ōcean Stár Straße Ægir ǅemal İstanbul ΣΊΣΥΦΟΣ ﬁsh naïve Ǆ ß Ǳ",
    "٣٤٥ ३४५ 一二三 東京2024 a١b ক্ষ e\u0301 a\u0308b 🐟fish",
    "x" * 2046 + " tail",
    "y" * 2047 + " tail",
    "é" * 1023 + " " + "é" * 1024,
    " ".join(f"word{i} ünïcode-{i}" for i in range(200)),
    "",
    "!!! --- ...",
)


@pytest.mark.parametrize("text", SEARCH_TEXTS)
def test_search_is_the_parsers_lexemes(cur, text):
    report_id = insert(cur, {"notes": [{"note": text}]})
    # The parser's lexemes; its positions too where a query could ask for them (a code the
    # parser splits), none otherwise.
    cur.execute("select strip(r.search) = strip(p.v), r.search = p.v or r.search = strip(p.v) "
                "from sync.reports r, to_tsvector('simple', regexp_replace(coalesce(app.fold(%s), ''), "
                "'[^[:alnum:]]+', ' ', 'g')) p(v) where r.id = %s", (text, report_id))
    assert cur.fetchone() == (True, True)


def test_ordinary_words_are_stored_without_positions(cur):
    report_id = insert(cur, {"vessel": {"name": "Ōcean Stár"}, "notes": [{"note": "CR-2023-01234 ec-cap-56008"}]})
    cur.execute("select search = strip(search), search <> ''::tsvector from sync.reports where id = %s", (report_id,))
    assert cur.fetchone() == (True, True)


def test_search_finds_a_code_that_reads_as_a_number(cur):
    # The parser splits `400e908d` (the number 400e908, then d) in the query as in the
    # stored text: the list's query for the whole code finds its report.
    report_id = insert(cur, {"vessel": {"name": "Kilo", "permitNumber": "400e908d"}})
    cur.execute("select r.search @@ to_tsquery('simple', app.fold(%s)) from sync.reports r where r.id = %s",
                ("'400e908d':*", report_id))
    assert cur.fetchone()[0] is True


def test_search_finds_every_word_as_a_prefix(cur):
    report_id = insert(cur, {"vessel": {"name": "Ōcean Stár", "permitNumber": "CR-2023-01234"}})
    cur.execute("select count(*) filter (where r.search @@ to_tsquery('simple', app.fold(q))) from sync.reports r, "
                "unnest(array['''ocean'':* & ''2023'':*', '''stá'':*', '''cr'':* & ''012'':*', '''oceans'':*']) q "
                "where r.id = %s", (report_id,))
    assert cur.fetchone()[0] == 3


# The eight facts that were generated columns until Migrations/0102 (officer_key, safety_rank,
# is_draft from 0031; officer_email, safety_level, lon, lat, is_boarding from 0050), now stored
# by the same trigger: their values for documents of each shape, and a statement that writes
# them directly, on insert and on update, is overwritten like the others.
PLAIN = ("officer_key", "safety_rank", "is_draft", "officer_email", "safety_level", "lon", "lat", "is_boarding")


def plain(cur, report_id):
    cur.execute(f"select {', '.join(PLAIN)} from sync.reports where id = %s", (report_id,))
    return cur.fetchone()


@pytest.mark.parametrize("doc, expected", [
    ({"reportingOfficer": {"email": "Ana.Lopez@Example.ORG"}, "inspection": {"summary": {"safetyLevel": {"level": "Red"}}},
      "location": [-17.25, 14.5]},
     ("ana.lopez@example.org", 3, False, "ana.lopez@example.org", "Red", -17.25, 14.5, True)),
    ({"draft": True, "inspection": {"summary": {"safetyLevel": {"level": "Amber"}}}, "location": [1]},
     ("", 2, True, None, "Amber", 1.0, None, False)),
    ({"draft": "true", "inspection": {"summary": {"safetyLevel": {"level": "Green"}}}, "location": ["1", 2]},
     ("", 1, True, None, "Green", None, 2.0, False)),
    ({"draft": False, "inspection": {"summary": {"safetyLevel": {"level": "red"}}}, "location": {"lon": 1}},
     ("", 0, False, None, "red", None, None, True)),
    ({"draft": "yes", "reportingOfficer": {"email": None}, "inspection": {"summary": {"safetyLevel": "Red"}}},
     ("", 0, False, None, None, None, None, True)),
    ({}, ("", 0, False, None, None, None, None, True)),
])
def test_the_facts_that_were_plain_expressions(cur, doc, expected):
    assert plain(cur, insert(cur, doc)) == expected


def test_a_statement_cannot_set_the_plain_expression_facts(cur):
    forged = ("officer_key = 'forged', safety_rank = 9, is_draft = true, officer_email = 'forged', "
              "safety_level = 'forged', lon = 99, lat = 99, is_boarding = false")
    report_id = insert(cur, {"reportingOfficer": {"email": "A@B.C"}, "location": [3, 4]})
    expected = ("a@b.c", 0, False, "a@b.c", None, 3.0, 4.0, True)
    cur.execute(f"update sync.reports set {forged} where id = %s", (report_id,))
    assert plain(cur, report_id) == expected
    other = "facts-" + uuid.uuid4().hex
    cur.execute("insert into sync.reports (id, partition, doc, seq, officer_key, safety_rank, is_draft, officer_email,"
                " safety_level, lon, lat, is_boarding) values (%s, %s, %s, 0, 'forged', 9, true, 'forged', 'forged', 99, 99,"
                " false)", (other, partition(cur), json.dumps({"reportingOfficer": {"email": "A@B.C"}, "location": [3, 4]})))
    assert plain(cur, other) == expected
    # a tombstone is no boarding; brought back, it is one again
    cur.execute("update sync.reports set deleted = true, doc = null where id = %s", (report_id,))
    assert plain(cur, report_id) == ("", 0, False, None, None, None, None, False)
    cur.execute("update sync.reports set deleted = false, doc = '{\"location\": [5, 6]}' where id = %s", (report_id,))
    assert plain(cur, report_id) == ("", 0, False, None, None, 5.0, 6.0, True)


# A push's new reports get their facts from app.insert_documents' INSERT, computed for the whole
# statement; every other insert, and every update, from the trigger (Migrations/0108). Both read
# app.report_row_facts: the two must store the same 22 values, byte for byte.
PUSHED = [
    {"date": "2024-03-05T10:00:00+02:00", "vessel": {"name": "Ōcean Stár", "permitNumber": "CR-2023-01234"},
     "captain": {"name": "José Núñez", "license": "L/1"}, "crew": [{"name": "Ana"}, {"license": "K9"}, "not an object"],
     "inspection": {"summary": {"violations": [{"disposition": "Warning", "offence": {"code": "B-12", "explanation": "Nets"}},
                                               {"disposition": "Citation", "offence": {"code": ""}}, {"disposition": ""}],
                                "safetyLevel": {"level": "Red"}},
                    "actualCatch": [{"fish": "Tuna", "weight": 10, "unit": "lbs"}, {"fish": "Cod", "weight": 2},
                                    {"fish": "", "weight": 3}, {"fish": "Bass", "weight": "4"}]},
     "notes": [{"note": "Straße"}, {"other": 1}], "reportingOfficer": {"email": "A@B.C"}, "location": [3, 4]},
    {}, {"draft": True, "location": [1]}, {"draft": "true", "location": ["1", 2]},
    {"crew": {"name": "no"}, "notes": "text", "inspection": {"summary": {"violations": {"disposition": "Warning"}}, "actualCatch": 5}},
    {"date": "not a date", "timestamp": "2024-01-01T00:00:00Z"},
] + [{"notes": [{"note": text}]} for text in SEARCH_TEXTS]


def row_facts(cur, alias):
    """The 22 fact columns (app.report_row_facts' fields) of the table alias, as one row."""
    cur.execute("select string_agg(%s || '.' || attname, ', ' order by attnum) from pg_attribute "
                "where attrelid = 'app.report_row_facts'::regclass and attnum > 0 and not attisdropped", (alias,))
    return f"row({cur.fetchone()[0]})"


def test_a_push_stores_the_facts_the_trigger_stores(cur):
    """The same documents pushed (app.insert_documents, unguarded and guarded) and inserted by a
    plain statement (the trigger): every fact equal, nulls included, the search vector too."""
    cur.execute("select doc from sync.reports where not deleted and doc is not null order by seq desc limit 20")
    docs = PUSHED + [r[0] for r in cur.fetchall()]
    tag = uuid.uuid4().hex[:8]
    for guarded in (False, True):
        ids = [f"pushed-{tag}-{guarded}-{k}" for k in range(len(docs))]
        cur.execute("select count(*) from app.insert_documents('reports', null, %s, %s, %s, %s::jsonb, guarded => %s)",
                    (ids, ids, [partition(cur)] * len(ids), json.dumps(docs), guarded))
        for k, doc in enumerate(docs):
            cur.execute("insert into sync.reports (id, partition, doc, seq) values (%s, %s, %s, 0)",
                        ("plain-" + ids[k], partition(cur), json.dumps(doc)))
    cur.execute(f"""select count(*), count(*) filter (where {row_facts(cur, 'a')} is distinct from {row_facts(cur, 'b')}),
                           count(*) filter (where a.search::text <> b.search::text)
                      from sync.reports a join sync.reports b on b.id = 'plain-' || a.id
                     where a.id like %s""", (f"pushed-{tag}-%",))
    assert cur.fetchone() == (2 * len(docs), 0, 0)


def test_every_stored_report_has_its_documents_facts(cur):
    """Every report in the database, however it was written (pushes, the trigger, the seed,
    earlier tests), stores what app.report_row_facts computes from its document now."""
    cur.execute("set local max_parallel_workers_per_gather = 0")  # app.iso_time's exception block
    cur.execute(f"""select count(*), count(*) filter (where {row_facts(cur, 'r')} is distinct from {row_facts(cur, 'f')})
                      from sync.reports r, app.report_row_facts(r.doc, r.deleted) f""")
    total, differing = cur.fetchone()
    assert total > 0 and differing == 0
