"""How a report's row is stored (Migrations/0104: `toast_tuple_target = 4000` on
sync.reports): a report of the usual size (~2.3 KB of JSON, a row of ~3.4 KB) is kept whole
in its heap row, neither compressed nor moved to the TOAST table; a bigger one is still
compressed and, when it does not fit even so, moved out of line. Whichever way it is stored,
it reads back as written. Each test writes in a transaction it rolls back."""
import json
import random
import uuid

import pytest


@pytest.fixture
def cur(rolled_back_cursor):
    return rolled_back_cursor


def toast_rows(cur):
    cur.execute("select reltoastrelid::regclass::text from pg_class where oid = 'sync.reports'::regclass")
    cur.execute(f"select count(*) from {cur.fetchone()[0]}")
    return cur.fetchone()[0]


def report(size, compressible):
    """A report's document of about `size` bytes of JSON: notes of repeated words (compress
    well) or random hex under a key no fact reads (lz4 and pglz gain almost nothing; as notes
    it would also fill the search words)."""
    rng = random.Random(size)
    doc = {"date": "2024-03-05T10:00:00Z", "vessel": {"name": "Ocean Star", "permitNumber": "CR-1"},
           "captain": {"name": "Jose"}, "notes": [], "signatures": []}
    while len(json.dumps(doc)) < size:
        if compressible:
            doc["notes"].append({"note": "nets checked at dawn " * 4})
        else:
            doc["signatures"].append("%032x" % rng.getrandbits(128))
    return doc


def stored(cur, doc):
    """Inserts `doc` as a new report; answers how its document is stored: (compression, moved
    out of line), and checks that it reads back as written."""
    report_id = "storage-" + uuid.uuid4().hex
    before = toast_rows(cur)
    cur.execute("select 'agency=' || key from app.agencies order by key limit 1")
    cur.execute("insert into sync.reports (id, partition, doc, seq) values (%s, %s, %s, 0)",
                (report_id, cur.fetchone()[0], json.dumps(doc)))
    cur.execute("select doc, doc::text = %s::jsonb::text, pg_column_compression(doc) from sync.reports where id = %s",
                (json.dumps(doc), report_id))
    back, same_text, compression = cur.fetchone()
    assert back == doc and same_text
    return compression, toast_rows(cur) > before


def test_a_report_of_the_usual_size_stays_whole_in_its_row(cur):
    # ~2.3 KB of JSON: with the default target (2 KB) it was compressed and moved out of line.
    assert stored(cur, report(2300, compressible=False)) == (None, False)
    assert stored(cur, report(2300, compressible=True)) == (None, False)


def test_a_bigger_report_is_compressed_in_its_row(cur):
    compression, moved = stored(cur, report(6000, compressible=True))
    assert compression is not None and not moved


def test_a_report_too_big_for_the_row_even_compressed_is_moved_out_of_line(cur):
    compression, moved = stored(cur, report(12000, compressible=False))
    assert moved
