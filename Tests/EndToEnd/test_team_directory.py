"""The teams' directory (issue 17): every user of an agency syncs its teams, with their
members' public profiles, in the agency's partition; the server keeps it in step with teams,
grants and members; nobody else writes it."""
import json

import psycopg2.errors
import pytest

from conftest import admin_db, claim, new_user, worker_db
from synclib import PUSH_LOG_INDEX, Client, Replica, change, counts, new_agency, new_team
from test_events import Stream, wait_until_subscribed
from test_teams import grant, revoke


def listings(replica, partition):
    return {doc_id: doc for (collection, doc_id), doc in replica.docs.get(partition, {}).items()
            if collection == "teamDirectory"}


def member_rights(listing):
    return {m["userId"]: m["right"] for m in listing["members"]}


@pytest.fixture(scope="module")
def world():
    key, other, third = new_agency(), new_agency(), new_agency()
    admin = Client(new_user(role="agencyAdmin", agency=key))
    officer = Client(new_user(agency=key))
    outsider = Client(new_user(agency=other))
    stranger = Client(new_user(agency=third))
    partition = new_team(admin.email, key, "Boat crew")
    return {"key": key, "other": other, "third": third, "admin": admin, "officer": officer, "outsider": outsider,
            "stranger": stranger, "team": partition, "tid": partition.split("=", 1)[1]}


def test_the_agency_lists_its_teams_with_members_public_profiles(world):
    key, tid = world["key"], world["tid"]
    assert grant(world["admin"], world["team"], "user", world["officer"].id, "write").status_code == 200
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set display_name = 'Ada Obiang' where id = %s", (world["officer"].id,))
    device = Replica(world["officer"], [f"agency={key}"])
    device.sync()
    listing = listings(device, f"agency={key}")[tid]
    assert listing["_id"] == listing["team"] == tid and listing["partition"] == world["team"]
    assert listing["name"] == "Boat crew" and listing["agency"] == key and listing["archived"] is False
    # The creator manages it; the officer was given write; only public profiles.
    assert member_rights(listing) == {world["admin"].id: "manage", world["officer"].id: "write"}
    officer = next(m for m in listing["members"] if m["userId"] == world["officer"].id)
    assert officer == {"userId": world["officer"].id, "displayName": "Ada Obiang", "agency": key, "right": "write"}
    assert "@" not in json.dumps(listing["members"]), "no email in a public listing"
    assert listing["openTo"] == []
    # Another agency's users neither read this partition nor get a listing of the team.
    assert world["outsider"].pull({f"agency={key}": None})[f"agency={key}"] == {"status": "forbidden"}
    theirs = Replica(world["outsider"], [f"agency={world['other']}"])
    theirs.sync()
    assert listings(theirs, f"agency={world['other']}") == {}


def test_a_new_team_is_listed_once_with_its_manager():
    """app.create_team writes the listing once (version 1, one tick of the agency's clock),
    already naming its creator as manager: not first without and then with the manager."""
    key = new_agency()
    admin = Client(new_user(role="agencyAdmin", agency=key))
    clock = "select coalesce((select seq from app.partition_clocks where partition = %s), 0)"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute(clock, (f"agency={key}",))
        before = cur.fetchone()[0]
    tid = new_team(admin.email, key, "Night watch").split("=", 1)[1]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select version, doc from sync.team_directory where id = %s", (tid,))
        version, doc = cur.fetchone()
        cur.execute(clock, (f"agency={key}",))
        after = cur.fetchone()[0]
        cur.execute("select count(*) from app.grants where partition = %s", (f"team={tid}",))
        grants = cur.fetchone()[0]
    assert version == 1 and after == before + 1
    assert member_rights(doc) == {admin.id: "manage"} and grants == 1


def test_a_joint_team_is_listed_in_every_agency_it_reaches_and_withdrawn(world):
    key, other, third, tid = world["key"], world["other"], world["third"], world["tid"]
    theirs = Replica(world["outsider"], [f"agency={other}"])
    theirs.sync()
    strangers = Replica(world["stranger"], [f"agency={third}"])
    strangers.sync()
    assert grant(world["admin"], world["team"], "user", world["outsider"].id, "read").status_code == 200
    assert grant(world["admin"], world["team"], "agency", third, "read").status_code == 200
    theirs.sync()
    strangers.sync()
    joint = listings(theirs, f"agency={other}")[f"{tid}@{other}"]
    assert joint["team"] == tid and joint["agency"] == key and member_rights(joint)[world["outsider"].id] == "read"
    assert f"{tid}@{third}" in listings(strangers, f"agency={third}")
    assert {"kind": "agency", "agency": third, "right": "read"} in joint["openTo"]
    # The owning agency's listing says the same about the team.
    mine = Replica(world["officer"], [f"agency={key}"])
    mine.sync()
    assert listings(mine, f"agency={key}")[tid]["members"] == joint["members"]
    # Withdrawn: the agency's listing becomes a delete for those who synced it.
    assert revoke(world["admin"], world["team"], "user", world["outsider"].id).status_code == 204
    assert revoke(world["admin"], world["team"], "agency", third).status_code == 204
    theirs.sync()
    strangers.sync()
    assert listings(theirs, f"agency={other}") == {}
    assert listings(strangers, f"agency={third}") == {}
    mine.sync()
    assert world["outsider"].id not in member_rights(listings(mine, f"agency={key}")[tid])


def test_renames_archives_and_member_changes_follow(world):
    key, tid = world["key"], world["tid"]
    device = Replica(world["officer"], [f"agency={key}"])
    device.sync()
    stream = Stream(world["officer"].token, [f"agency={key}"])
    assert stream.status == 200
    wait_until_subscribed(stream)
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.teams set name = 'Mbini crew', archived = true where id = %s", (tid,))
    event = stream.next()
    assert event not in (None, "timeout") and f'"agency={key}"' in event["data"], event
    stream.close()
    device.sync()
    listing = listings(device, f"agency={key}")[tid]
    assert listing["name"] == "Mbini crew" and listing["archived"] is True
    # A member deactivated leaves the listing; renamed, the listing shows the new name.
    member = Client(new_user(agency=key))
    assert grant(world["admin"], world["team"], "user", member.id, "read").status_code == 200
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.teams set archived = false where id = %s", (tid,))
        cur.execute("update app.users set display_name = 'Renamed Member' where id = %s", (member.id,))
    device.sync()
    shown = {m["userId"]: m.get("displayName") for m in listings(device, f"agency={key}")[tid]["members"]}
    assert shown[member.id] == "Renamed Member"
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("update app.users set active = false where id = %s", (member.id,))
    device.sync()
    assert member.id not in member_rights(listings(device, f"agency={key}")[tid])
    # Nothing changed: refreshing every team writes nothing and ticks no clock.
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select seq from app.partition_clocks where partition = %s", (f"agency={key}",))
        before = cur.fetchone()[0]
        cur.execute("select count(*) from (select app.team_directory_refresh(id) from app.teams) x")
        cur.execute("select seq from app.partition_clocks where partition = %s", (f"agency={key}",))
        assert cur.fetchone()[0] == before


@pytest.mark.parametrize("who", ["officer", "admin"])
def test_no_client_writes_the_directory(world, who):
    key, tid = world["key"], world["tid"]
    client = world[who]
    before = counts()
    results = client.push([
        change("insert", "teamDirectory", f"agency={key}", "forged-team", {"_id": "forged-team", "name": "Forged"}),
        change("update", "teamDirectory", f"agency={key}", tid, {"name": "Hijacked"}),
        change("delete", "teamDirectory", f"agency={key}", tid)])
    assert [r["status"] for r in results] == ["rejected"] * 3, results
    assert {r["error"]["code"] for r in results} == {"forbidden"}
    after = counts()  # only the push log grew (a refused change is remembered for its retry)
    assert after[:PUSH_LOG_INDEX] == before[:PUSH_LOG_INDEX] and after[PUSH_LOG_INDEX + 1:] == before[PUSH_LOG_INDEX + 1:]
    assert after[PUSH_LOG_INDEX] == before[PUSH_LOG_INDEX] + 3
    # Nor can the worker's database role, whatever its claims.
    conn = worker_db()
    try:
        for statement in ("insert into sync.team_directory (id, partition, doc, seq) values ('x', %s, '{}', 1)",
                          "update sync.team_directory set doc = '{}' where partition = %s",
                          "delete from sync.team_directory where partition = %s"):
            with conn.cursor() as cur:
                claim(cur, client.id, "globalAdmin")
                with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                    cur.execute(statement, (f"agency={key}",))
            conn.rollback()
    finally:
        conn.close()
