"""Chat: domain.md's server effects 1–6 through the public API, as two or three users,
and the original app's holes kept closed."""
import concurrent.futures
import uuid

from conftest import admin_db, api, login, new_user
from synclib import Client, Replica

ALL = "all-users=all-the-users"


class Member:
    """A signed-in chat user with their own documents pulled."""

    def __init__(self, email=None):
        self.email = email or new_user(agency=None)
        answer = login(self.email)
        self.id = answer["user"]["id"]
        self.client = Replica(Client(token=answer["accessToken"]))
        self.partition = f"user={self.id}"

    def me(self):
        self.client.pull(self.partition)
        return self.client.doc(self.partition, "users", self.id)

    def conversations(self):
        return {c["id"]: c for c in self.me()["conversations"]}

    def edit_conversations(self, conversations):
        return self.client.push_one({"collection": "users", "partition": self.partition, "id": self.id,
                                     "op": "update", "patch": {"conversations": conversations}})

    def create(self, conv_id, name, *members):
        entry = {"id": conv_id, "displayName": name, "unreadCount": 0,
                 "members": [{"userName": m.email} if isinstance(m, Member) else m for m in members]}
        return self.edit_conversations(list(self.me()["conversations"]) + [entry])

    def say(self, conv_id, text, **extra):
        doc = {"text": text, "timestamp": "2026-11-21T10:00:00Z", **extra}
        return self.client.push_one({"collection": "chatMessages", "partition": f"conversation={conv_id}",
                                     "id": uuid.uuid4().hex, "op": "insert", "doc": doc})

    def unread(self, conv_id):
        return self.conversations()[conv_id]["unreadCount"]


def conv_id():
    return "c-" + uuid.uuid4().hex[:12]


def test_new_user_has_both_documents_at_once():
    m = Member()
    assert m.client.pull(m.partition, ALL) == {m.partition: "ok", ALL: "ok"}
    me = m.client.doc(m.partition, "users", m.id)
    assert me["userName"] == m.email and me["conversations"] == []
    chatster = m.client.doc(ALL, "chatsters", m.id)
    assert chatster["userName"] == m.email
    assert "conversations" not in chatster and "unreadCount" not in str(chatster)


def test_create_conversation_copies_it_to_every_member_once():
    a, b, c = Member(), Member(), Member()
    cid = conv_id()
    result = a.create(cid, "Patrol 7", b, {"userId": c.id}, {"userId": a.id})
    assert result["status"] == "applied", result
    for member in (a, b, c):
        convs = [x for x in member.me()["conversations"] if x["id"] == cid]
        assert len(convs) == 1, member.me()
        assert convs[0]["unreadCount"] == 0 and convs[0]["displayName"] == "Patrol 7"
        assert sorted(x["userId"] for x in convs[0]["members"]) == sorted([a.id, b.id, c.id])
        assert member.client.pull(f"conversation={cid}")[f"conversation={cid}"] == "ok"


def test_unknown_members_are_rejected_and_nothing_is_created():
    a, b = Member(), Member()
    cid = conv_id()
    result = a.create(cid, "Ghosts", b, {"userName": "nobody-" + uuid.uuid4().hex + "@nowhere.test"})
    assert result["status"] == "rejected" and result["error"]["code"] == "invalid"
    assert "unknown members" in result["error"]["message"]
    assert cid not in a.conversations() and cid not in b.conversations()
    with admin_db() as db, db.cursor() as cur:
        cur.execute("select count(*) from app.conversations where id = %s", (cid,))
        assert cur.fetchone()[0] == 0


def test_listing_a_foreign_conversation_grants_nothing():
    a, b, intruder = Member(), Member(), Member()
    cid = conv_id()
    assert a.create(cid, "Private", b)["status"] == "applied"
    result = intruder.create(cid, "Mine now", intruder)
    assert result["status"] == "rejected" and result["error"]["code"] == "forbidden"
    assert cid not in intruder.conversations()
    assert intruder.client.pull(f"conversation={cid}")[f"conversation={cid}"] == "forbidden"


def test_rename_add_member_and_leave_reach_every_copy():
    a, b, c, d = Member(), Member(), Member(), Member()
    cid = conv_id()
    assert a.create(cid, "Old name", b, c)["status"] == "applied"
    # b renames
    convs = b.me()["conversations"]
    for x in convs:
        if x["id"] == cid:
            x["displayName"] = "New name"
    assert b.edit_conversations(convs)["status"] == "applied"
    for m in (a, b, c):
        assert m.conversations()[cid]["displayName"] == "New name"
    # a adds d
    convs = a.me()["conversations"]
    for x in convs:
        if x["id"] == cid:
            x["members"].append({"userName": d.email})
    assert a.edit_conversations(convs)["status"] == "applied"
    assert d.conversations()[cid]["displayName"] == "New name"
    # c leaves: its partition is gone at once, the others see it leave
    partition = f"conversation={cid}"
    assert c.client.pull(partition)[partition] == "ok"
    assert c.edit_conversations([x for x in c.me()["conversations"] if x["id"] != cid])["status"] == "applied"
    assert c.client.pull(partition)[partition] == "forbidden"
    assert cid not in c.conversations()
    for m in (a, b, d):
        assert c.id not in [x["userId"] for x in m.conversations()[cid]["members"]]
    assert c.say(cid, "still here?")["status"] == "rejected"


def test_messages_count_as_unread_for_everyone_but_the_author():
    a, b, c = Member(), Member(), Member()
    cid = conv_id()
    assert a.create(cid, "Counts", b, c)["status"] == "applied"
    assert a.say(cid, "one")["status"] == "applied"
    assert a.say(cid, "two")["status"] == "applied"
    assert b.say(cid, "three")["status"] == "applied"
    assert (a.unread(cid), b.unread(cid), c.unread(cid)) == (1, 2, 3)
    # reset to 0 by the reader
    convs = c.me()["conversations"]
    for x in convs:
        if x["id"] == cid:
            x["unreadCount"] = 0
    assert c.edit_conversations(convs)["status"] == "applied"
    assert c.unread(cid) == 0 and b.unread(cid) == 2


def test_server_sets_the_author_and_refuses_someone_elses():
    a, b = Member(), Member()
    cid = conv_id()
    assert a.create(cid, "Authors", b)["status"] == "applied"
    forged = b.say(cid, "I am a", author=a.email)
    assert forged["status"] == "rejected" and forged["error"]["code"] == "forbidden"
    mid = uuid.uuid4().hex
    ok = b.client.push_one({"collection": "chatMessages", "partition": f"conversation={cid}", "id": mid, "op": "insert",
                            "doc": {"text": "hello", "timestamp": "2026-11-21T10:00:00Z"}})
    assert ok["status"] == "applied"
    partition = f"conversation={cid}"
    a.client.pull(partition)
    msg = a.client.doc(partition, "chatMessages", mid)
    assert msg["author"] == b.email and msg["authorId"] == b.id and msg["serverTimestamp"]
    # only the author edits or deletes
    edit = a.client.push_one({"collection": "chatMessages", "partition": partition, "id": mid, "op": "update",
                              "patch": {"text": "changed by a"}})
    assert edit["status"] == "rejected" and edit["error"]["code"] == "forbidden"
    delete = a.client.push_one({"collection": "chatMessages", "partition": partition, "id": mid, "op": "delete"})
    assert delete["error"]["code"] == "forbidden"
    before = a.unread(cid)
    assert b.client.push_one({"collection": "chatMessages", "partition": partition, "id": mid, "op": "update",
                              "patch": {"text": "edited"}})["status"] == "applied"
    assert a.unread(cid) == before  # edits change no counts


def test_concurrent_messages_and_resets_lose_nothing():
    a, b, c, d = Member(), Member(), Member(), Member()
    cid = conv_id()
    assert a.create(cid, "Busy", b, c, d)["status"] == "applied"

    def send(who, n):
        return who.say(cid, f"message {n}")["status"]

    def reset(who):
        convs = who.me()["conversations"]
        for x in convs:
            if x["id"] == cid:
                x["unreadCount"] = 0
        return who.edit_conversations(convs)["status"]

    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        sends = [pool.submit(send, a if n % 2 else b, n) for n in range(50)]
        resets = [pool.submit(reset, d) for _ in range(10)]
        assert all(f.result() == "applied" for f in sends)
        assert all(f.result() == "applied" for f in resets)
    # c never resets: every message counts, exactly once
    assert c.unread(cid) == 50
    assert a.unread(cid) == 25 and b.unread(cid) == 25
    # d reset while messages arrived: from here on, each new message counts exactly once
    settled = d.unread(cid)
    assert 0 <= settled <= 50
    for n in range(10):
        assert a.say(cid, f"after {n}")["status"] == "applied"
    assert d.unread(cid) == settled + 10
    # the rendered documents equal the server's truth
    with admin_db() as db, db.cursor() as cur:
        cur.execute("""select m.user_id::text, m.unread,
                              (select (x->>'unreadCount')::int from jsonb_array_elements(u.doc->'conversations') x where x->>'id' = %s)
                         from app.conversation_members m join sync.users u on u.id = m.user_id::text
                        where m.conversation_id = %s""", (cid, cid))
        for user_id, truth, rendered in cur.fetchall():
            assert truth == rendered, user_id


def test_presence_follows_sync_and_hidden_is_respected():
    m = Member()
    m.client.pull(m.partition, ALL)
    m.client.pull(m.partition, ALL)
    assert m.client.doc(m.partition, "users", m.id)["presence"] == "On-Line"
    assert m.client.doc(ALL, "chatsters", m.id)["presence"] == "On-Line"
    with admin_db() as db, db.cursor() as cur:
        cur.execute("select app.sweep_presence(0)")  # as if 60 s had passed without a sync
        # (no pull here: a sync would rightly make the user On-Line again)
        cur.execute("select doc->>'presence', doc->>'lastSeenAt' from sync.chatsters where id = %s", (m.id,))
        presence, last_seen = cur.fetchone()
    assert presence == "Off-Line" and last_seen
    hidden = m.client.push_one({"collection": "users", "partition": m.partition, "id": m.id, "op": "update",
                                "patch": {"presence": "Hidden"}})
    assert hidden["status"] == "applied"
    m.client.pull(ALL)
    assert m.client.doc(ALL, "chatsters", m.id)["presence"] == "Hidden"
    refused = m.client.push_one({"collection": "users", "partition": m.partition, "id": m.id, "op": "update",
                                 "patch": {"presence": "Off-Line", "userName": "someone@else"}})
    assert refused["status"] == "rejected" and refused["error"]["code"] == "forbidden"


def test_chatsters_follow_only_mirrored_fields():
    a, b = Member(), Member()
    cid = conv_id()
    assert a.create(cid, "Mirror", b)["status"] == "applied"

    def chatster_version():
        with admin_db() as db, db.cursor() as cur:
            cur.execute("select version, doc from sync.chatsters where id = %s", (b.id,))
            return cur.fetchone()

    b.me()  # b is On-Line now: presence is a mirrored field, unread counts are not
    version, _ = chatster_version()
    for n in range(3):
        assert a.say(cid, f"n{n}")["status"] == "applied"
    assert b.unread(cid) == 3
    assert chatster_version()[0] == version  # unread counts do not touch chatsters
    assert b.client.push_one({"collection": "users", "partition": b.partition, "id": b.id, "op": "update",
                              "patch": {"userPreferences": {"displayName": "Captain B"}}})["status"] == "applied"
    new_version, doc = chatster_version()
    assert new_version > version and doc["displayName"] == "Captain B"


def test_sign_up_is_off_by_default():
    r = api("POST", "/api/v1/auth/register", json={"email": "x@y.test", "password": "long enough", "displayName": "X"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"


def test_rights_are_those_held_when_the_push_starts():
    # The contract (sync-protocol.md, "Push"): a message in the same push as the `users`
    # change that creates its conversation needs a right the caller did not hold when the
    # push started: it is refused `forbidden` and writes nothing; the next push is applied.
    a, b = Member(), Member()
    cid = conv_id()
    me = a.me()
    entry = {"id": cid, "displayName": "Same push", "unreadCount": 0, "members": [{"userName": b.email}]}
    message = {"collection": "chatMessages", "partition": f"conversation={cid}", "id": uuid.uuid4().hex,
               "op": "insert", "doc": {"text": "first", "timestamp": "2026-11-21T10:00:00Z"}}
    created, said = a.client.push(
        {"collection": "users", "partition": a.partition, "id": a.id, "op": "update",
         "patch": {"conversations": list(me["conversations"]) + [entry]}}, dict(message))
    assert created["status"] == "applied", created
    assert said["status"] == "rejected" and said["error"]["code"] == "forbidden", said
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from sync.chat_messages where id = %s", (message["id"],))
        assert cur.fetchone()[0] == 0
    (again,) = a.client.push(dict(message))
    assert again["status"] == "applied", again
    assert b.unread(cid) == 1
