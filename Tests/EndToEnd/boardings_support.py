"""Helpers for the back-office boardings tests: browser sign-in, forms read from pages,
reports arranged directly in the database."""
import json
import re
import uuid
from html.parser import HTMLParser

from conftest import CA, PASSWORD, URL, admin_db, session


def signed_in(email):
    """A requests session signed in through the sign-in page, like a browser."""
    s = session()
    page = s.get(URL + "/login")
    token = re.search(r'name="_csrf" value="([^"]+)"', page.text).group(1)
    r = s.post(URL + "/login", data={"_csrf": token, "email": email, "password": PASSWORD}, allow_redirects=False)
    assert r.status_code == 303, r.text
    return s


class FormReader(HTMLParser):
    """The fields of the page's report form as a browser would post them (no buttons)."""

    def __init__(self):
        super().__init__()
        self.fields = {}
        self.in_form = False
        self.select = None
        self.textarea = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and "report-form" in (a.get("class") or ""):
            self.in_form = True
        if not self.in_form:
            return
        if tag == "input" and a.get("name"):
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.fields[a["name"]] = a.get("value", "on")
            else:
                self.fields[a["name"]] = a.get("value", "")
        elif tag == "select":
            self.select = a.get("name")
            self.fields.setdefault(self.select, "")
        elif tag == "option" and self.select and "selected" in a:
            self.fields[self.select] = a.get("value", "")
        elif tag == "textarea":
            self.textarea = a.get("name")
            self.fields[self.textarea] = ""

    def handle_data(self, data):
        if self.textarea:
            self.fields[self.textarea] += data

    def handle_endtag(self, tag):
        if tag == "select":
            self.select = None
        elif tag == "textarea":
            self.textarea = None
        elif tag == "form":
            self.in_form = False


def form_fields(html):
    reader = FormReader()
    reader.feed(html)
    return reader.fields


def report_doc(vessel, captain="Test Captain", **extra):
    """A complete report document (domain.md) with a unique id."""
    doc = {
        "_id": uuid.uuid4().hex[:24],
        "draft": False,
        "timestamp": "2025-03-02T11:00:00Z",
        "date": "2025-03-02T10:00:00Z",
        "location": [9.3, -0.8],
        "reportingOfficer": {"name": {"first": "Test", "last": "Officer"}, "email": "gabon.officer1@demo.tideway"},
        "vessel": {"name": vessel, "homePort": "Libreville", "nationality": "GA", "permitNumber": "GA-2025-" + uuid.uuid4().hex[:5]},
        "captain": {"name": captain, "license": "GA-CAP-1"},
        "crew": [{"name": "Crew One", "license": "GA-1"}],
        "inspection": {
            "activity": {"name": "Fishing"},
            "actualCatch": [{"fish": "Tuna", "number": 3, "weight": 12.5, "unit": "kg"}],
            "summary": {"safetyLevel": {"level": "Green", "amberReason": ""}, "violations": []},
        },
    }
    doc.update(extra)
    return doc


def insert_report(doc, agency="Gabon"):
    """Arranges a report as if a phone had synced it (the partition clock ticks)."""
    partition = "agency=" + agency
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("insert into sync.reports (id, partition, doc, seq) values (%s, %s, %s::jsonb, app.tick(%s))",
                    (doc["_id"], partition, json.dumps(doc), partition))
    return doc["_id"]


def stored(report_id):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select doc, version, partition from sync.reports where id = %s", (report_id,))
        return cur.fetchone()


def history_exists():
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select to_regclass('app.report_history') is not null")
        return cur.fetchone()[0]
