"""Helpers shared by the sync end-to-end tests: pulling and pushing over HTTPS, the
server's own view of a partition (a superuser query of the sync.* tables), and arranging
chat state that only the server's chat effects would create (users documents,
conversations), so that every partition kind has documents to be isolated."""
import json
import time
import uuid

import requests

from conftest import CA, URL, admin_db, claim, login, worker_db

TABLES = {"reports": "reports", "photos": "photos", "dutyChanges": "duty_changes", "menuData": "menu_data",
          "mpas": "mpas", "agencyTasks": "agency_tasks", "users": "users", "chatsters": "chatsters",
          "chatMessages": "chat_messages", "tasks": "tasks", "teamNotes": "team_notes", "teamDirectory": "team_directory"}
KIND_COLLECTIONS = {"agency": ["reports", "photos", "dutyChanges", "menuData", "mpas", "agencyTasks", "teamDirectory"],
                    "user": ["users"],
                    "all-users": ["chatsters"], "conversation": ["chatMessages"], "team": ["tasks", "teamNotes"]}
TS = "2024-05-01T10:00:00Z"


class CASession(requests.Session):
    """A session that always checks the stack's own CA (a session's `verify` alone loses to
    REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE in the environment)."""

    def request(self, method, url, **kwargs):
        kwargs.setdefault("verify", CA)
        return super().request(method, url, **kwargs)


class Client:
    """One signed-in user with a kept-alive HTTPS session."""

    def __init__(self, email=None, token=None):
        """Signs `email` in, or uses a `token` some other sign-in gave."""
        answer = login(email) if token is None else {"accessToken": token, "user": {"id": None}}
        self.email = email
        self.token = answer["accessToken"]
        self.user = answer["user"]
        self.id = self.user["id"]
        self.http = CASession()
        self.http.headers["Authorization"] = f"Bearer {self.token}"

    def post(self, path, body, **kwargs):
        return self.http.post(URL + path, json=body, timeout=60, **kwargs)

    def pull_raw(self, partitions, limit=None, wait=None):
        body = {"partitions": partitions}
        if limit is not None:
            body["limit"] = limit
        if wait is not None:
            body["wait"] = wait
        return self.post("/api/v1/sync/pull", body)

    def pull(self, partitions, **kwargs):
        r = self.pull_raw(partitions, **kwargs)
        assert r.status_code == 200, r.text
        return r.json()["partitions"]

    def push_raw(self, changes, client_id=None):
        return self.post("/api/v1/sync/push", {"clientId": client_id or uuid.uuid4().hex, "changes": changes})

    def push(self, changes, client_id=None):
        r = self.push_raw(changes, client_id)
        assert r.status_code == 200, r.text
        results = r.json()["results"]
        assert [x["changeId"] for x in results] == [c["changeId"] for c in changes]
        return results


class Replica:
    """A device's copy of partitions: pulls until `more` is false and pushes with its own
    clientId and change ids. The one sync client of the tests, over a `Client`'s session."""

    def __init__(self, client, partitions=(), limit=1000, client_id=None):
        self.client = client
        self.client_id = client_id or "test-" + uuid.uuid4().hex[:8]
        self.cursors = {p: None for p in partitions}
        self.docs = {p: {} for p in partitions}
        self.limit = limit
        self.pages = 0
        self._n = 0

    def _apply(self, p, entry):
        store = self.docs.setdefault(p, {})
        for change in entry["changes"]:
            key = (change["collection"], change["id"])
            if change["op"] == "delete":
                store.pop(key, None)
            else:
                assert change["op"] == "upsert" and change["doc"]["_id"] == change["id"]
                store[key] = change["doc"]
        self.cursors[p] = entry["cursor"]

    def pull_once(self):
        """One pull of every partition, each of which must answer `ok`; True when some said `more`."""
        answer = self.client.pull(dict(self.cursors), limit=self.limit)
        more = False
        for p, entry in answer.items():
            assert entry["status"] == "ok", (p, entry)
            self._apply(p, entry)
            more = more or entry["more"]
        self.pages += 1
        return more

    def sync(self):
        while self.pull_once():
            pass

    def pull(self, *partitions, wait=0):
        """Pulls `partitions` until `more` is false; answers each one's last status. A
        `forbidden` or `reset` partition's copy is dropped, as a device does."""
        statuses = {}
        pending = list(partitions)
        while pending:
            answer = self.client.pull({p: self.cursors.get(p) for p in pending}, limit=self.limit, wait=wait)
            pending = []
            for p, entry in answer.items():
                statuses[p] = entry["status"]
                if entry["status"] in ("forbidden", "reset"):
                    self.docs.pop(p, None)
                    self.cursors.pop(p, None)
                elif entry["status"] == "ok":
                    self._apply(p, entry)
                    if entry["more"]:
                        pending.append(p)
            self.pages += 1
        return statuses

    def push(self, *changes):
        """Pushes with this device's clientId, numbering changes that have no changeId."""
        numbered = []
        for c in changes:
            if not c.get("changeId"):
                self._n += 1
                c = dict(c, changeId=f"{self.client_id}-{self._n}")
            numbered.append(c)
        return self.client.push(numbered, client_id=self.client_id)

    def push_one(self, change):
        return self.push(change)[0]

    def doc(self, partition, collection, doc_id):
        return self.docs.get(partition, {}).get((collection, doc_id))


def server_state(partition):
    """Every live document of a partition, as the database holds it."""
    kind = partition.split("=", 1)[0]
    state = {}
    with admin_db() as conn, conn.cursor() as cur:
        for collection in KIND_COLLECTIONS[kind]:
            cur.execute(f"select id, doc from sync.{TABLES[collection]} where partition = %s and not deleted",
                        (partition,))
            for doc_id, doc in cur.fetchall():
                state[(collection, doc_id)] = doc
    return state


def jobs_settled(timeout=30):
    """Waits until the job runner has no due job left: thumbnails and offloads that earlier
    tests queued write photos (and their agency's clock) in the background."""
    deadline = time.monotonic() + timeout
    with admin_db() as conn, conn.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("select count(*) from app.jobs where state = 'pending' and run_after <= now()")
            if cur.fetchone()[0] == 0:
                return
            time.sleep(0.1)


# Where counts() keeps the push log's row count (the tests compare everything around it).
PUSH_LOG_INDEX = 9


def counts():
    """Rows of every sync table, the clocks and the push log: to show that nothing was written.
    Presence is left out: any sync (even a refused push) marks its user On-Line, and the
    sweep marks idle users Off-Line at any moment, writing users' and chatsters' documents
    (their clocks), so those clocks move whatever a test sends. Background jobs are let
    finish first."""
    jobs_settled()
    with admin_db() as conn, conn.cursor() as cur:
        # The push log stays at PUSH_LOG_INDEX: the team tables (issue 17) go last.
        later = ["agency_tasks", "tasks", "team_notes", "team_directory"]
        parts = [f"(select count(*) from sync.{t})" for t in TABLES.values() if t not in later]
        parts += ["(select coalesce(sum(seq), 0) from app.partition_clocks"
                  " where partition not like 'user=%' and partition <> 'all-users=all-the-users')",
                  "(select count(*) from app.push_log)",
                  "(select coalesce(sum(version), 0) from sync.reports)"]
        parts += [f"(select count(*) from sync.{t})" for t in later]
        cur.execute("select " + ", ".join(parts))
        return cur.fetchone()


def user_id(email):
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id::text from app.users where lower(email) = lower(%s)", (email,))
        return cur.fetchone()[0]


def ensure_user_document(uid, email):
    """The user's own `users` document, as the chat server effects will create it (issue 4)."""
    p = f"user={uid}"
    doc = {"_id": uid, "userName": email, "displayName": email, "presence": "Off-Line", "conversations": []}
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("insert into sync.users (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s)) "
                    "on conflict (id) do nothing", (uid, p, json.dumps(doc), p))
        cur.execute("insert into sync.chatsters (id, partition, doc, seq) values (%s, 'all-users=all-the-users', %s, "
                    "app.tick('all-users=all-the-users')) on conflict (id) do nothing",
                    (uid, json.dumps({"_id": uid, "userName": email, "displayName": email, "presence": "Off-Line"})))


def new_conversation(member_ids):
    """A conversation with these members and one message, as server-side state."""
    cid = "conv-" + uuid.uuid4().hex[:12]
    p = f"conversation={cid}"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("insert into app.conversations (id, display_name, created_by) values (%s, %s, %s)",
                    (cid, "test", member_ids[0]))
        for m in member_ids:
            cur.execute("insert into app.conversation_members (conversation_id, user_id) values (%s, %s)", (cid, m))
        mid = uuid.uuid4().hex
        cur.execute("insert into sync.chat_messages (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s))",
                    (mid, p, json.dumps({"_id": mid, "text": "hello", "timestamp": TS, "authorId": member_ids[0]}), p))
    return cid


def new_team(admin_email, agency, name="Crew"):
    """A team of `agency` created by that agency's admin (app.create_team, as the back
    office does it): the admin becomes its first manager. Answers its partition."""
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id::text, role, coalesce(agency, '') from app.users where lower(email) = lower(%s)",
                    (admin_email,))
        uid, role, own = cur.fetchone()
    conn = worker_db()
    try:
        with conn.cursor() as cur:
            claim(cur, uid, role, own)
            cur.execute("select app.create_team(%s, %s)", (agency, name))
            tid = cur.fetchone()[0]
        conn.commit()
    finally:
        conn.close()
    return f"team={tid}"


def new_agency(prefix="T"):
    """A fresh agency of its own, so that a test's partition is its alone: its key (and
    name) is `prefix` and a random suffix."""
    key = f"{prefix} {uuid.uuid4().hex[:8]}"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("insert into app.agencies (key, name) values (%s, %s)", (key, key))
    return key


def doc_for(collection, doc_id, uid=None, email=None):
    """A valid new document of each collection."""
    return {
        "reports": {"_id": doc_id, "timestamp": TS, "draft": True},
        "photos": {"_id": doc_id, "date": TS},
        "dutyChanges": {"_id": doc_id, "user": {"email": "x@test.tideway"}, "date": TS, "status": "On Duty"},
        "menuData": {"_id": doc_id, "ports": ["Libreville"]},
        "mpas": {"_id": doc_id, "name": "Test area", "coordinates": [[9.0, 0.0], [9.5, 0.0], [9.5, 0.5], [9.0, 0.0]]},
        "users": {"_id": doc_id, "userName": email or "nobody@test.tideway", "displayName": email or "nobody",
                  "presence": "Off-Line", "conversations": [], "userPreferences": {"shareLocation": True}},
        "chatsters": {"_id": doc_id, "userName": "x@test.tideway"},
        "chatMessages": {"_id": doc_id, "text": "hi", "timestamp": TS},
        "agencyTasks": {"_id": doc_id, "title": "Patrol the reef", "status": "open"},
        "tasks": {"_id": doc_id, "title": "Check the nets", "status": "open", "dueDate": TS},
        "teamNotes": {"_id": doc_id, "text": "Fuel low", "timestamp": TS},
        "teamDirectory": {"_id": doc_id, "name": "A forged team"},
    }[collection]


PATCHES = {"reports": {"draft": False}, "photos": {"referencingReportID": "r-1"}, "dutyChanges": {"status": "Off Duty"},
           "menuData": {"ports": ["Port-Gentil"]}, "mpas": {"name": "Renamed"},
           "users": {"userPreferences": {"shareLocation": False}}, "chatsters": {"displayName": "y"},
           "chatMessages": {"text": "edited"}, "agencyTasks": {"status": "in progress"},
           "tasks": {"status": "in progress"}, "teamNotes": {"text": "Fuel topped up"},
           "teamDirectory": {"name": "Renamed by a client"}}


def change(op, collection, partition, doc_id, body=None, change_id=None):
    c = {"changeId": change_id or uuid.uuid4().hex, "collection": collection, "partition": partition, "id": doc_id,
         "op": op}
    if op == "insert":
        c["doc"] = body
    elif op == "update":
        c["patch"] = body
    return c
