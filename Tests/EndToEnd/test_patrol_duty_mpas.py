"""dutyChanges (status normalization, patrol hours in SQL) and MPAs (closed rings of at
least 4 points; the demo's sample polygons)."""
import json
import uuid

import pytest

from conftest import admin_db, token, worker_db
from patrol_support import as_caller, pull_to_end, push_one
from synclib import new_agency

DAY = "2026-02-10"


@pytest.fixture(scope="module")
def agency():
    """A fresh agency with hand-made duty changes (stored already normalized)."""
    key = new_agency("Hours")
    partition = f"agency={key}"
    changes = [
        # ana: 08-12 (4 h); 14-18 with a repeated On at 15 that starts nothing new (4 h).
        ("Ana@Example.org", f"{DAY}T08:00:00Z", "On Duty"),
        ("ana@example.org", f"{DAY}T12:00:00Z", "Off Duty"),
        ("ana@example.org", f"{DAY}T14:00:00Z", "On Duty"),
        ("ana@example.org", f"{DAY}T15:00:00Z", "On Duty"),
        ("ana@example.org", f"{DAY}T18:00:00Z", "Off Duty"),
        ("ana@example.org", f"{DAY}T19:00:00Z", "Off Duty"),
        # ben: 09:30-10:00 in another zone's notation (0.5 h), then on duty since two hours ago.
        ("ben@example.org", f"{DAY}T11:30:00+02:00", "On Duty"),
        ("ben@example.org", f"{DAY}T12:00:00+02:00", "Off Duty"),
    ]
    with admin_db() as conn, conn.cursor() as cur:
        for email, date, status in changes:
            doc = {"_id": str(uuid.uuid4()), "user": {"email": email}, "date": date, "status": status}
            cur.execute("insert into sync.duty_changes (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s))",
                        (doc["_id"], partition, json.dumps(doc), partition))
        doc = {"_id": str(uuid.uuid4()), "user": {"email": "ben@example.org"}, "status": "On Duty"}
        cur.execute("""insert into sync.duty_changes (id, partition, doc, seq)
                       values (%s, %s, %s::jsonb || jsonb_build_object('date', to_char((now() - interval '2 hours')
                               at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')), app.tick(%s))""",
                    (doc["_id"], partition, json.dumps(doc), partition))
    return key


def hours(key, email, start, end):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select app.patrol_hours(%s, %s, %s::timestamptz, %s::timestamptz)", (key, email, start, end))
        return cur.fetchone()[0]


def test_patrol_hours_sum_on_to_next_off_intervals(agency):
    assert hours(agency, "ana@example.org", f"{DAY}T00:00:00Z", f"{DAY}T23:59:59Z") == pytest.approx(8)
    assert hours(agency, "ANA@example.org", f"{DAY}T00:00:00Z", f"{DAY}T23:59:59Z") == pytest.approx(8)
    assert hours(agency, "ben@example.org", f"{DAY}T00:00:00Z", f"{DAY}T23:59:59Z") == pytest.approx(0.5)
    assert hours(agency, "nobody@example.org", f"{DAY}T00:00:00Z", f"{DAY}T23:59:59Z") == 0


def test_patrol_hours_are_clipped_to_the_window(agency):
    assert hours(agency, "ana@example.org", f"{DAY}T10:00:00Z", f"{DAY}T16:00:00Z") == pytest.approx(4)
    assert hours(agency, "ana@example.org", f"{DAY}T12:00:00Z", f"{DAY}T14:00:00Z") == 0
    assert hours(agency, "ana@example.org", f"{DAY}T17:30:00Z", f"{DAY}T20:00:00Z") == pytest.approx(0.5)


def test_an_open_interval_counts_up_to_now(agency):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select app.patrol_hours(%s, 'ben@example.org', now() - interval '1 day', now() + interval '1 day')",
                    (agency,))
        assert cur.fetchone()[0] == pytest.approx(2, abs=0.01)
        # Everyone of the agency: ana's 8 h, ben's 0.5 h and his open 2 h.
        cur.execute("select app.patrol_hours(%s, null, %s::timestamptz, now() + interval '1 day')", (agency, f"{DAY}T00:00:00Z"))
        assert cur.fetchone()[0] == pytest.approx(10.5, abs=0.01)


def test_patrol_hours_follow_row_level_security(agency):
    tok = token("gabon.officer1@demo.tideway")
    with worker_db() as conn:
        cur = as_caller(conn, tok)
        cur.execute("select app.patrol_hours(%s, null, '2000-01-01', '2100-01-01')", (agency,))
        assert cur.fetchone()[0] == 0  # another agency's duty changes are invisible
        cur.execute("select app.patrol_hours('Gabon', null, '2000-01-01', now())")
        assert cur.fetchone()[0] > 0  # the demo's duty shifts


def test_at_sea_and_on_land_are_stored_as_on_and_off_duty():
    tok = token("gabon.officer1@demo.tideway")
    stored = {}
    for written in ["At Sea", "On Land", "On Duty"]:
        did = str(uuid.uuid4())
        result = push_one(tok, collection="dutyChanges", partition="agency=Gabon", id=did, op="insert",
                          doc={"user": {"email": "gabon.officer1@demo.tideway"}, "date": "2026-03-01T08:00:00Z",
                               "status": written})
        assert result["status"] == "applied", result
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute("select doc->>'status' from sync.duty_changes where id = %s", (did,))
            stored[written] = cur.fetchone()[0]
    assert stored == {"At Sea": "On Duty", "On Land": "Off Duty", "On Duty": "On Duty"}
    result = push_one(tok, collection="dutyChanges", partition="agency=Gabon", id=str(uuid.uuid4()), op="insert",
                      doc={"user": {"email": "x@y.z"}, "date": "2026-03-01T08:00:00Z", "status": "Asleep"})
    assert result["status"] == "rejected" and result["error"]["path"] == "/status"


def test_the_demo_mpas_are_pulled_as_closed_rings():
    changes, _ = pull_to_end(token("wildaid.officer1@demo.tideway"), "agency=WildAid")
    mpas = [c["doc"] for c in changes if c["collection"] == "mpas"]
    assert "Cocos Island Marine Preserve" in [m["name"] for m in mpas]
    for mpa in mpas:
        assert len(mpa["coordinates"]) >= 4 and mpa["coordinates"][0] == mpa["coordinates"][-1]


@pytest.mark.parametrize("ring, path", [
    ([[-87, 5], [-86, 5], [-86, 6], [-87, 6]], "/coordinates/3"),  # not closed
    ([[-87, 5], [-86, 5], [-87, 5]], "/coordinates"),  # closed, 3 points
    ([[-87, 5], [-86, 95], [-86, 6], [-87, 5]], "/coordinates/1/1"),  # latitude out of range
])
def test_mpa_rings_must_be_closed_with_four_points(ring, path):
    tok = token("wildaid.admin@demo.tideway")
    result = push_one(tok, collection="mpas", partition="agency=WildAid", id=str(uuid.uuid4()), op="insert",
                      doc={"name": "Test reserve", "coordinates": ring})
    assert result["status"] == "rejected" and result["error"]["code"] == "invalid"
    assert result["error"]["path"] == path


def test_mpas_are_written_by_admins_only():
    doc = {"name": "Test reserve", "coordinates": [[-87, 5], [-86, 5], [-86, 6], [-87, 5]]}
    admin = push_one(token("wildaid.admin@demo.tideway"), collection="mpas", partition="agency=WildAid",
                     id=str(uuid.uuid4()), op="insert", doc=doc)
    assert admin["status"] == "applied", admin
    officer = push_one(token("wildaid.officer1@demo.tideway"), collection="mpas", partition="agency=WildAid",
                       id=str(uuid.uuid4()), op="insert", doc=doc)
    assert officer["status"] == "rejected" and officer["error"]["code"] == "forbidden"
