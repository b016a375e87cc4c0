"""Fixtures for `tideway import` (issue 18): Atlas exports in the shapes of O-FISH's
`wildaid` database (docs/domain.md), written the way mongodump and mongoexport write them —
BSON with Python's `bson` (Debian's python3-pymongo), Extended JSON canonical and relaxed —
and what each document should become in Tideway."""
import datetime
import gzip
import json
import os
import random
import subprocess
import uuid

import bson
from bson import Binary, Decimal128, Int64, ObjectId
from bson.json_util import CANONICAL_JSON_OPTIONS, RELAXED_JSON_OPTIONS, dumps

from patrol_support import REPO, tool_env

TIDEWAY = os.environ.get("TIDEWAY_TEST_TOOL", os.path.join(REPO, ".build/release/tideway"))
MENU = json.loads(open(os.path.join(REPO, "Data/ofish/menu-data.jsonl"), encoding="utf-8").readline())
NAMES = ["Ana", "Luis", "Marta", "Jean", "Aïcha", "Pedro", "Nadia", "Omar"]


def run_import(*args, check=True, timeout=300, env=None):
    environment = {k: v for k, v in tool_env().items() if not k.startswith("TIDEWAY_SMTP_")}
    return subprocess.run([TIDEWAY, "import", "--quiet", *args], env={**environment, **(env or {})}, capture_output=True,
                          text=True, check=check, timeout=timeout)


def when(rnd, days=400):
    """A UTC instant with whole milliseconds (BSON dates are milliseconds)."""
    base = datetime.datetime(2020, 3, 1, tzinfo=datetime.timezone.utc)
    return base + datetime.timedelta(milliseconds=rnd.randrange(days * 86_400_000))


def iso(moment):
    return moment.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def person(rnd):
    return {"name": {"first": rnd.choice(NAMES), "last": rnd.choice(NAMES) + "son"}, "email": f"{uuid.uuid4().hex[:8]}@fish.example"}


def crew(rnd):
    return {"name": rnd.choice(NAMES) + " " + rnd.choice(NAMES), "license": f"L-{rnd.randrange(10000)}"}


def report(rnd, agency, **extra):
    """A boarding report as the O-FISH apps stored it in Atlas."""
    doc = {
        "_id": ObjectId(), "agency": agency, "draft": False, "timestamp": when(rnd), "date": when(rnd),
        "location": [round(rnd.uniform(-92, -89), 5), round(rnd.uniform(-2, 1), 5)],
        "reportingOfficer": person(rnd),
        "vessel": {"name": "Gaviota " + str(rnd.randrange(100)), "homePort": rnd.choice(MENU["ports"]),
                   "nationality": "EC", "permitNumber": f"EC-{rnd.randrange(10000)}",
                   "ems": [{"emsType": MENU["emsTypes"][0], "emsDescription": "", "registryNumber": "R-1"}],
                   "lastDelivery": {"date": when(rnd), "location": rnd.choice(MENU["ports"]), "business": "Mercado"},
                   "attachments": {"notes": [], "photoIDs": []}},
        "captain": crew(rnd), "crew": [crew(rnd) for _ in range(rnd.randrange(1, 4))],
        "notes": [{"note": "Calm sea", "photoIDs": []}],
        "inspection": {
            "activity": {"name": MENU["activities"][0]}, "fishery": {"name": rnd.choice(MENU["fisheries"])},
            "gearType": {"name": rnd.choice(MENU["gear"])},
            "actualCatch": [{"fish": rnd.choice(MENU["species"]), "number": rnd.randrange(1, 50),
                             "weight": rnd.randrange(1, 4000) / 4, "unit": "kg"}],
            "summary": {"safetyLevel": {"level": rnd.choice(["Green", "Amber", "Red"]), "amberReason": ""},
                        "violations": [{"disposition": rnd.choice(["", "Warning", "Citation"]),
                                        "offence": {"code": MENU["violationCodes"][0],
                                                    "explanation": MENU["violationDescriptions"][0]},
                                        "crewMember": crew(rnd)}],
                        "seizures": {"text": ""}}},
    }
    doc.update(extra)
    return doc


def expected(value):
    """What Tideway stores for an exported value: ObjectIds as hex, dates as ISO 8601 UTC with
    milliseconds, decimals as numbers (rule numeric-string), the partition field gone, empty
    strings where a date belongs and the web's extra fields dropped."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in ("agency", "_partition", "webOnly") or (k == "date" and v == ""):
                continue
            out[k] = expected(v)
        return out
    if isinstance(value, list):
        return [expected(v) for v in value]
    if isinstance(value, ObjectId):
        return str(value)
    if isinstance(value, datetime.datetime):
        return iso(value)
    if isinstance(value, Decimal128):
        return float(value.to_decimal())
    if isinstance(value, Int64):
        return int(value)
    return value


def fake_jpeg(rnd, size):
    return b"\xff\xd8\xff\xe0" + bytes(rnd.randrange(256) for _ in range(size - 6)) + b"\xff\xd9"


def write_bson(path, docs, gzipped=False):
    data = b"".join(bson.encode(d) for d in docs)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if gzipped:
        with gzip.open(path + ".gz", "wb") as f:
            f.write(data)
    else:
        with open(path, "wb") as f:
            f.write(data)
    collection = os.path.basename(path)[:-5]
    # mongodump's companion file; the import reads the collection from the file name.
    meta = {"options": {}, "indexes": [{"v": 2, "key": {"_id": 1}, "name": "_id_"}], "collectionName": collection}
    with open(os.path.join(os.path.dirname(path), collection + ".metadata.json" + (".gz" if gzipped else "")), "wb") as f:
        f.write(gzip.compress(json.dumps(meta).encode()) if gzipped else json.dumps(meta).encode())


def write_json_lines(path, docs, canonical=True):
    options = CANONICAL_JSON_OPTIONS if canonical else RELAXED_JSON_OPTIONS
    with open(path, "w", encoding="utf-8") as f:
        for d in docs:
            f.write(dumps(d, json_options=options) + "\n")


def write_json_array(path, docs, canonical=False):
    options = CANONICAL_JSON_OPTIONS if canonical else RELAXED_JSON_OPTIONS
    with open(path, "w", encoding="utf-8") as f:
        f.write(dumps(docs, json_options=options, indent=2))


class Export:
    """One agency's O-FISH data: a mongodump folder and a mongoexport folder."""

    def __init__(self, root, seed=18, reports=20):
        rnd = random.Random(seed)
        self.rnd = rnd
        self.agency = f"Imported {uuid.uuid4().hex[:8]}"
        self.partition = "agency=" + self.agency
        self.dump = os.path.join(root, "dump")
        self.export = os.path.join(root, "export")
        os.makedirs(self.export, exist_ok=True)
        tag = uuid.uuid4().hex[:8]
        self.agencies = [{"_id": ObjectId(), "name": self.agency, "description": "From Atlas", "email": f"ops-{tag}@fish.example",
                          "site": "fish.example", "active": True, "partnerAgencies": []}]
        self.users = [
            {"_id": ObjectId(), "email": f"officer-{tag}@fish.example", "name": {"first": "Ana", "last": "Lopez"},
             "agency": {"name": self.agency, "admin": False}, "global": {"admin": False}, "active": True},
            {"_id": ObjectId(), "email": f"admin-{tag}@fish.example", "name": {"first": "Luis", "last": "Vera"},
             "agency": {"name": self.agency, "admin": True}, "global": {"admin": False}, "active": True,
             "profilePic": None},
            # Deactivated in O-FISH: stays deactivated, gets no invitation.
            {"_id": ObjectId(), "email": f"gone-{tag}@fish.example", "name": {"first": "Old", "last": "Hand"},
             "agency": {"name": self.agency, "admin": False}, "global": {"admin": False}, "active": False},
        ]
        self.reports = [report(rnd, self.agency) for _ in range(reports)]
        # Drift of the real apps: an empty string for a missing date, a web-only field,
        # a decimal weight.
        self.reports[1]["date"] = ""
        self.reports[2]["webOnly"] = "x"
        self.reports[3]["inspection"]["actualCatch"][0]["weight"] = Decimal128("7.25")
        self.reports[4]["_partition"] = self.agency
        del self.reports[4]["agency"]
        self.history = []
        first = self.reports[0]
        for days in (3, 2):
            older = dict(first, vessel=dict(first["vessel"], name=f"Old name {days}"))
            self.history.append({"_id": ObjectId(), "dateCreated": first["timestamp"] - datetime.timedelta(days=days),
                                 "originalDocument": older, "user": person(rnd)})
        self.pictures = [fake_jpeg(rnd, 3000 + 500 * i) for i in range(2)]
        self.photos = [{"_id": ObjectId(), "agency": self.agency, "picture": Binary(pic), "thumbNail": Binary(pic[:600]),
                        "pictureURL": "", "referencingReportID": str(first["_id"]), "date": when(rnd)}
                       for pic in self.pictures]
        self.duty = [{"_id": ObjectId(), "agency": self.agency, "user": person(rnd), "date": when(rnd), "status": s}
                     for s in ["At Sea", "On Land", "On Duty", "Off Duty"]]
        self.menu = [{"_id": ObjectId(), "agency": self.agency,
                      **{k: v for k, v in MENU.items() if k not in ("_id", "agency")}}]

    def write(self):
        db = os.path.join(self.dump, "wildaid")
        write_bson(os.path.join(db, "Agency.bson"), self.agencies)
        write_bson(os.path.join(db, "User.bson"), self.users)
        write_bson(os.path.join(db, "BoardingReports.bson"), self.reports[:15])
        write_bson(os.path.join(db, "ChangeHistory.bson"), self.history)
        write_bson(os.path.join(db, "Photo.bson"), self.photos, gzipped=True)
        # mongoexport: the rest of the reports as canonical JSON Lines, duty changes as a
        # relaxed array, menu lists as relaxed JSON Lines.
        write_json_lines(os.path.join(self.export, "BoardingReports.json"), self.reports[15:], canonical=True)
        write_json_array(os.path.join(self.export, "DutyChange.json"), self.duty, canonical=False)
        write_json_lines(os.path.join(self.export, "MenuData.json"), self.menu, canonical=False)
        return self


class ChatExport:
    """RChat's database: users with their conversations, chatsters, messages."""

    def __init__(self, root, seed=5):
        rnd = random.Random(seed)
        tag = uuid.uuid4().hex[:8]
        self.folder = os.path.join(root, "rchat")
        self.names = [f"{n.lower()}-{tag}@chat.example" for n in ("Ana", "Luis", "Marta")]
        self.conversation = f"conv-{tag}"
        self.messages = []
        for i in range(7):
            self.messages.append({"_id": str(uuid.uuid4()), "partition": "conversation=" + self.conversation,
                                  "author": self.names[i % 2], "text": f"message {i}", "location": [],
                                  "timestamp": datetime.datetime(2021, 5, 1, 12, i, tzinfo=datetime.timezone.utc)})
        members = [{"userName": n, "membershipStatus": "Membership active"} for n in self.names]
        self.unread = {self.names[0]: 0, self.names[1]: 2, self.names[2]: 7}
        self.users = [{"_id": str(uuid.uuid4()), "partition": "user=x", "userName": n, "presence": "Off-Line",
                       "userPreferences": {"displayName": n.split("-")[0].title(), "avatarImage": None},
                       "conversations": [{"id": self.conversation, "displayName": "Patrol chat",
                                          "unreadCount": self.unread[n], "members": members}]}
                      for n in self.names]
        self.chatsters = [{"_id": n, "partition": "all-users=all-the-users", "userName": n, "presence": "Off-Line"}
                          for n in self.names]
        # A message by somebody who is not in the export.
        self.stranger = {"_id": str(uuid.uuid4()), "partition": "conversation=" + self.conversation,
                         "author": f"stranger-{tag}@chat.example", "text": "hi", "timestamp": datetime.datetime.now(datetime.timezone.utc)}

    def write(self):
        write_bson(os.path.join(self.folder, "User.bson"), self.users)
        write_bson(os.path.join(self.folder, "Chatster.bson"), self.chatsters)
        write_json_lines(os.path.join(self.folder, "ChatMessage.json"), self.messages + [self.stranger], canonical=False)
        return self
