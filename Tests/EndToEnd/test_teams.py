"""Teams and grants (issue 17): the isolation matrix of team partitions (who × which grant
× pull, push insert/update/delete, events, the grants API), the database refusing the
same as the worker role, the grant rules (nothing above manage, never without a manager),
revocation, and the server-side assignment of an agency's tasks."""
import uuid

import psycopg2
import psycopg2.errors
import psycopg2.extras
import pytest

from conftest import URL, admin_db, claim, error_of, new_user, worker_db
from synclib import PATCHES, TABLES, CASession, Client, change, doc_for, new_agency, new_team, server_state, user_id
from test_events import Stream, wait_until_subscribed

RIGHTS = {"none": 0, "read": 1, "write": 2, "manage": 3}
TEAM_COLLECTIONS = ["tasks", "teamNotes"]


def grant(client, partition, kind, who, right):
    body = {"partition": partition, "grantee": {"kind": kind, **({"id": who} if who is not None else {})}, "right": right}
    return client.http.put(URL + "/api/v1/grants", json=body, timeout=30)


def revoke(client, partition, kind, who=None):
    params = {"partition": partition, "kind": kind}
    if who is not None:
        params["id"] = who
    return client.http.delete(URL + "/api/v1/grants", params=params, timeout=30)


def seed(partition):
    """One document of each team collection in the partition, written as the server would."""
    with admin_db() as conn, conn.cursor() as cur:
        for collection in TEAM_COLLECTIONS:
            d = f"seed-{uuid.uuid4().hex[:12]}"
            cur.execute(f"insert into sync.{TABLES[collection]} (id, partition, doc, seq) values (%s, %s, %s, app.tick(%s))",
                        (d, partition, psycopg2.extras.Json(doc_for(collection, d)), partition))


@pytest.fixture(scope="module")
def world():
    """A fresh agency with its admin, a team of it, and one user per case of the matrix, each
    given the grant the case names; a second team of the agency granted to everyone."""
    key = new_agency()
    other = new_agency()
    admin = Client(new_user(role="agencyAdmin", agency=key))
    team = new_team(admin.email, key, "Boat crew")
    everyone_team = new_team(admin.email, key, "Open to all")
    seed(team)
    seed(everyone_team)
    cases = {
        # name: (role, agency, grant kind or None, right, expected right on `team`)
        "officer, no grant": ("officer", key, None, None, "none"),
        "officer, read": ("officer", key, "user", "read", "read"),
        "officer, write": ("officer", key, "user", "write", "write"),
        "officer, manage": ("officer", key, "user", "manage", "manage"),
        "other agency's officer, write (joint team)": ("officer", other, "user", "write", "write"),
        "other agency's officer, no grant": ("officer", other, None, None, "none"),
        "other agency's officer, agency grant read": ("officer", "__other_agency_grant__", "agency", "read", "read"),
        "the agency's admin, no grant": ("agencyAdmin", key, None, None, "manage"),
        "another agency's admin, no grant": ("agencyAdmin", other, None, None, "none"),
        "global admin, no grant": ("globalAdmin", None, None, None, "manage"),
    }
    third = new_agency()
    clients = {}
    for name, (role, agency, kind, right, _) in cases.items():
        agency = third if agency == "__other_agency_grant__" else agency
        c = Client(new_user(role=role, agency=agency))
        clients[name] = c
        if kind == "user":
            assert grant(admin, team, "user", c.id, right).status_code == 200
        elif kind == "agency":
            assert grant(admin, team, "agency", third, right).status_code == 200
    assert grant(admin, everyone_team, "everyone", None, "read").status_code == 200
    return {"key": key, "admin": admin, "team": team, "everyone_team": everyone_team, "cases": cases,
            "clients": clients}


CASES = ["officer, no grant", "officer, read", "officer, write", "officer, manage",
         "other agency's officer, write (joint team)", "other agency's officer, no grant",
         "other agency's officer, agency grant read", "the agency's admin, no grant",
         "another agency's admin, no grant", "global admin, no grant"]


@pytest.mark.parametrize("case", CASES)
def test_pull_events_and_partitions_follow_the_right(world, case):
    client, right = world["clients"][case], world["cases"][case][4]
    team, everyone = world["team"], world["everyone_team"]
    answer = client.pull({team: None, everyone: None})
    if RIGHTS[right] >= 1:
        entry = answer[team]
        assert entry["status"] == "ok", (case, entry)
        got = {(c["collection"], c["id"]): c["doc"] for c in entry["changes"] if c["op"] == "upsert"}
        assert got == server_state(team) and got, case
    else:
        assert answer[team] == {"status": "forbidden"}, case
    # Everyone signed in reads the team granted to everyone, whatever else they hold.
    assert answer[everyone]["status"] == "ok" and answer[everyone]["changes"], case
    listed = {p["partition"]: p for p in client.http.get(URL + "/api/v1/sync/partitions").json()["partitions"]}
    assert (team in listed) == (RIGHTS[right] >= 1), case
    if team in listed:
        assert listed[team]["write"] == (RIGHTS[right] >= 2), case
    admin_of_it = case in ("the agency's admin, no grant", "global admin, no grant")
    assert everyone in listed and listed[everyone]["write"] is admin_of_it, case
    # Events: a subscription to a team the caller cannot read is refused.
    stream = Stream(client.token, [team])
    assert stream.status == (200 if RIGHTS[right] >= 1 else 403), case
    stream.close()


@pytest.mark.parametrize("case", CASES)
def test_push_insert_update_delete_follow_the_right(world, case):
    client, right = world["clients"][case], world["cases"][case][4]
    team = world["team"]
    for collection in TEAM_COLLECTIONS:
        table = TABLES[collection]
        expected = "applied" if RIGHTS[right] >= 2 else "forbidden"
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute(f"select id from sync.{table} where partition = %s and not deleted and id like 'seed-%%' limit 1",
                        (team,))
            existing = cur.fetchone()[0]
            cur.execute(f"select count(*), coalesce(sum(version), 0) from sync.{table} where partition = %s", (team,))
            before = cur.fetchone()
        d = f"m-{uuid.uuid4().hex}"
        target = d if expected == "applied" else existing
        results = client.push([change("insert", collection, team, d, doc_for(collection, d)),
                               change("update", collection, team, target, PATCHES[collection]),
                               change("delete", collection, team, target)])
        got = [r["status"] if r["status"] != "rejected" else r["error"]["code"] for r in results]
        assert got == [expected] * 3, (case, collection, results)
        with admin_db() as conn, conn.cursor() as cur:
            cur.execute(f"select count(*), coalesce(sum(version), 0) from sync.{table} where partition = %s", (team,))
            after = cur.fetchone()
        if expected == "forbidden":
            assert after == before, f"{case}: a refused push wrote something"
    # The team granted to everyone is read-only for those who hold nothing more there.
    everyone = world["everyone_team"]
    d = f"e-{uuid.uuid4().hex}"
    result = client.push([change("insert", "tasks", everyone, d, doc_for("tasks", d))])[0]
    admin_of_it = case in ("the agency's admin, no grant", "global admin, no grant")
    assert (result["status"] == "applied") == admin_of_it, (case, result)


@pytest.mark.parametrize("case", CASES)
def test_the_grants_api_follows_the_right(world, case):
    client, right = world["clients"][case], world["cases"][case][4]
    team = world["team"]
    listing = client.http.get(URL + "/api/v1/grants", params={"partition": team})
    bystander = new_user(agency=world["key"])
    bystander_id = user_id(bystander)
    put = grant(client, team, "user", bystander_id, "read")
    if RIGHTS[right] == 3:
        assert listing.status_code == 200, listing.text
        grants = listing.json()["grants"]
        assert {g["grantee"].get("id") for g in grants if g["grantee"]["kind"] == "user"} >= {world["admin"].id}
        assert put.status_code == 200 and put.json()["grant"]["right"] == "read"
        assert revoke(client, team, "user", bystander_id).status_code == 204
        assert revoke(client, team, "user", bystander_id).status_code == 404
    elif RIGHTS[right] >= 1:
        error_of(listing, 403, "forbidden")
        error_of(put, 403, "forbidden")
        error_of(revoke(client, team, "user", world["admin"].id), 403, "forbidden")
    else:
        error_of(listing, 404, "not_found")
        error_of(put, 404, "not_found")
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select count(*) from app.grants where partition = %s and grantee = %s", (team, bystander_id))
        assert cur.fetchone()[0] == 0


def test_me_grants_lists_rights_through_everyone_grants_agency_grants_and_roles(world):
    team, everyone = world["team"], world["everyone_team"]
    mine = lambda c: {g["partition"]: g for g in c.http.get(URL + "/api/v1/me/grants").json()["grants"]}  # noqa: E731
    reader = mine(world["clients"]["officer, read"])
    assert reader[team]["right"] == "read" and reader[team]["via"] == ["user"]
    assert reader[team]["team"] == {"name": "Boat crew", "agency": world["key"], "archived": False}
    assert reader[everyone]["right"] == "read" and reader[everyone]["via"] == ["everyone"]
    nobody = mine(world["clients"]["officer, no grant"])
    assert team not in nobody and nobody[everyone]["via"] == ["everyone"]
    by_agency = mine(world["clients"]["other agency's officer, agency grant read"])
    assert by_agency[team]["right"] == "read" and by_agency[team]["via"] == ["agency"]
    admin = mine(world["clients"]["the agency's admin, no grant"])
    assert admin[team]["right"] == "manage" and admin[team]["via"] == ["agencyAdmin"]
    assert admin[everyone]["via"] == ["agencyAdmin", "everyone"]
    assert mine(world["clients"]["global admin, no grant"])[team]["via"] == ["globalAdmin"]
    assert team not in mine(world["clients"]["another agency's admin, no grant"])


def test_no_grant_above_manage_and_never_without_a_manager(world):
    admin, team = world["admin"], world["team"]
    other = new_user(agency=world["key"])
    for right in ("owner", "admin", "", None, 4):
        error_of(grant(admin, team, "user", user_id(other), right), 422, "invalid")
    error_of(grant(admin, team, "user", str(uuid.uuid4()), "read"), 404, "not_found")
    error_of(grant(admin, team, "everyone", "someone", "read"), 422, "invalid")
    error_of(grant(admin, team, "group", "x", "read"), 422, "invalid")
    error_of(grant(admin, "agency=Gabon", "user", user_id(other), "read"), 422, "invalid")
    error_of(admin.http.get(URL + "/api/v1/grants"), 400, "bad_request")
    # A new team's creator holds its only manage grant: lowering or removing it is refused,
    # even to the agency's admin, who manages it anyway by role.
    solo = new_team(admin.email, world["key"], "Solo")
    error_of(grant(admin, solo, "user", admin.id, "write"), 409, "conflict")
    error_of(revoke(admin, solo, "user", admin.id), 409, "conflict")
    # Another manager first; then the creator's grant may go, and the new one is the last.
    manager = Client(new_user(agency=world["key"]))
    assert grant(admin, solo, "user", manager.id, "manage").status_code == 200
    assert grant(manager, solo, "user", admin.id, "write").status_code == 200
    error_of(revoke(manager, solo, "user", manager.id), 409, "conflict")
    error_of(grant(manager, solo, "user", manager.id, "read"), 409, "conflict")
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select grantee, \"right\" from app.grants where partition = %s order by 2", (solo,))
        assert cur.fetchall() == [(manager.id, "manage"), (admin.id, "write")]


def test_the_worker_role_cannot_cross_a_team_partition_in_sql(world):
    team = world["team"]
    outsider = world["clients"]["officer, no grant"]
    reader = world["clients"]["officer, read"]
    conn = worker_db()

    def claims(cur, c):
        with admin_db() as a, a.cursor() as acur:
            acur.execute("select role, coalesce(agency, '') from app.users where id = %s", (c.id,))
            role, agency = acur.fetchone()
        claim(cur, c.id, role, agency)
    try:
        for table in ("tasks", "team_notes"):
            with conn.cursor() as cur:
                claims(cur, outsider)
                cur.execute(f"select count(*) from sync.{table} where partition = %s", (team,))
                assert cur.fetchone()[0] == 0
                cur.execute(f"select distinct partition from sync.{table}")
                seen = {row[0] for row in cur.fetchall()}
                with admin_db() as a, a.cursor() as acur:
                    acur.execute("select partition from app.grants where grantee_kind = 'everyone'")
                    open_to_all = {row[0] for row in acur.fetchall()}
                assert world["everyone_team"] in seen and seen <= open_to_all, \
                    "an outsider sees only the teams granted to everyone"
                cur.execute(f"update sync.{table} set version = version + 1 where partition = %s", (team,))
                assert cur.rowcount == 0
            conn.rollback()
            with conn.cursor() as cur:
                claims(cur, reader)
                cur.execute(f"select count(*) from sync.{table} where partition = %s", (team,))
                assert cur.fetchone()[0] > 0
                cur.execute(f"update sync.{table} set version = version + 1 where partition = %s", (team,))
                assert cur.rowcount == 0, "a reader updates nothing"
            conn.rollback()
            for c in (outsider, reader):
                with conn.cursor() as cur:
                    claims(cur, c)
                    with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                        cur.execute(f"insert into sync.{table} (id, partition, doc, seq) values ('x', %s, '{{}}', 1)", (team,))
                conn.rollback()
        refused = [("insert into app.grants (partition, grantee_kind, grantee, \"right\") values (%s, 'user', %s, 'manage')",
                    (team, reader.id)),
                   ("update app.grants set \"right\" = 'manage' where partition = %s", (team,)),
                   ("delete from app.grants where partition = %s", (team,)),
                   ("update app.teams set name = 'mine'", ())]
        for statement, args in refused:
            with conn.cursor() as cur:
                claims(cur, reader)
                with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                    cur.execute(statement, args)
            conn.rollback()
        with conn.cursor() as cur:
            claims(cur, reader)
            with pytest.raises(psycopg2.Error) as raised:
                cur.execute("select app.set_grant(%s, 'user', %s, 'manage')", (team, reader.id))
            assert raised.value.pgcode == "TW403"
        conn.rollback()
        with conn.cursor() as cur:
            claims(cur, outsider)
            # The outsider sees none of the team's grants, and not the team either.
            cur.execute("select count(*) from app.grants where partition = %s", (team,))
            assert cur.fetchone()[0] == 0
            cur.execute("select app.can_read(%s), app.can_write(%s, 'tasks')", (team, team))
            assert cur.fetchone() == (False, False)
        conn.rollback()
    finally:
        conn.close()


def test_revoking_closes_the_stream_and_the_next_pull_is_forbidden(world):
    admin, team = world["admin"], world["team"]
    member = Client(new_user(agency=world["key"]))
    assert grant(admin, team, "user", member.id, "write").status_code == 200
    cursor = member.pull({team: None})[team]["cursor"]
    stream = Stream(member.token, [team])
    assert stream.status == 200
    wait_until_subscribed(stream)
    # Lowering to read keeps the stream: nothing is lost.
    assert grant(admin, team, "user", member.id, "read").status_code == 200
    assert stream.next(timeout=1.5) == "timeout"
    assert revoke(admin, team, "user", member.id).status_code == 204
    assert stream.next(timeout=10) is None, "the stream should have ended"
    assert member.pull({team: cursor}) == {team: {"status": "forbidden"}}
    assert member.pull({team: None}) == {team: {"status": "forbidden"}}
    assert Stream(member.token, [team]).status == 403
    # Nothing else was reset: the member's own agency still pulls.
    assert member.pull({f"agency={world['key']}": None})[f"agency={world['key']}"]["status"] == "ok"
    d = f"r-{uuid.uuid4().hex}"
    assert member.push([change("insert", "tasks", team, d, doc_for("tasks", d))])[0]["error"]["code"] == "forbidden"


def test_a_read_only_members_push_is_rejected_and_writes_nothing(world):
    reader, team = world["clients"]["officer, read"], world["team"]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select (select count(*) from sync.tasks), (select count(*) from sync.team_notes), "
                    "(select seq from app.partition_clocks where partition = %s), (select count(*) from app.push_log)",
                    (team,))
        before = cur.fetchone()
    changes = [change("insert", c, team, f"ro-{uuid.uuid4().hex}", None) for c in TEAM_COLLECTIONS]
    for c in changes:
        c["doc"] = doc_for(c["collection"], c["id"])
    results = reader.push(changes)
    assert [r["status"] for r in results] == ["rejected"] * 2
    assert {r["error"]["code"] for r in results} == {"forbidden"}
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select (select count(*) from sync.tasks), (select count(*) from sync.team_notes), "
                    "(select seq from app.partition_clocks where partition = %s), (select count(*) from app.push_log)",
                    (team,))
        after = cur.fetchone()
    assert after[:3] == before[:3]
    assert after[3] == before[3] + 2  # only the outcomes, so that a retry gets the same answer


def test_an_agency_task_is_copied_to_its_team_and_the_status_flows_back(world):
    key, admin, team = world["key"], world["admin"], world["team"]
    agency = f"agency={key}"
    writer = world["clients"]["officer, write"]
    tid = f"task-{uuid.uuid4().hex[:12]}"
    body = {"_id": tid, "title": "Board the trawler", "status": "open", "team": team[5:], "mpa": "Reef",
            "dueDate": "2026-12-01T00:00:00Z"}
    assert admin.push([change("insert", "agencyTasks", agency, tid, body)])[0]["status"] == "applied"
    copy = server_state(team)[("tasks", tid)]
    assert copy == {**{k: v for k, v in body.items() if k != "team"}, "assignment": {"agency": key}}
    # The member sees it in the team's partition, same id, and works on it.
    got = {c["id"]: c for c in writer.pull({team: None})[team]["changes"]}
    assert got[tid]["doc"]["title"] == "Board the trawler"
    result = writer.push([change("update", "tasks", team, tid, {"status": "in progress", "notes": "on our way"})])[0]
    assert result["status"] == "applied", result
    assert server_state(agency)[("agencyTasks", tid)]["status"] == "in progress"
    assert "notes" not in server_state(agency)[("agencyTasks", tid)], "only the status flows back"
    # The agency edits its task: the copy follows and keeps what only the team wrote.
    assert admin.push([change("update", "agencyTasks", agency, tid, {"title": "Board the trawler now"})])[0]["status"] == "applied"
    copy = server_state(team)[("tasks", tid)]
    assert copy["title"] == "Board the trawler now" and copy["notes"] == "on our way" and copy["status"] == "in progress"
    # Forgeries: a copy made by a client, the assignment changed, the copy deleted, an agency task's id taken.
    forged = f"forged-{uuid.uuid4().hex[:8]}"
    attempts = [
        change("insert", "tasks", team, forged, {"_id": forged, "title": "x", "status": "open", "assignment": {"agency": key}}),
        change("update", "tasks", team, tid, {"assignment": {"agency": "Gabon"}}),
        change("update", "tasks", team, tid, {"assignment": None}),
        change("delete", "tasks", team, tid),
    ]
    for attempt in attempts:  # one push each: every one is refused on its own
        result = writer.push([attempt])[0]
        assert result.get("error", {}).get("code") == "forbidden", (attempt, result)
    second = f"task-{uuid.uuid4().hex[:12]}"
    assert admin.push([change("insert", "agencyTasks", agency, second, {"_id": second, "title": "t", "status": "open"})])[0]["status"] == "applied"
    results = writer.push([change("insert", "tasks", team, second, {"_id": second, "title": "t", "status": "open"})])
    assert results[0]["error"]["code"] == "forbidden"
    assert ("tasks", forged) not in server_state(team) and ("tasks", second) not in server_state(team)
    # An officer cannot assign (agencyTasks are the admins'), nor name another agency's team.
    results = writer.push([change("insert", "agencyTasks", agency, f"o-{uuid.uuid4().hex}", {"title": "t", "status": "open"})])
    other_team = new_team("admin@demo.tideway", "Gabon", "Gabon crew")
    odd = f"odd-{uuid.uuid4().hex[:8]}"
    assert results[0]["error"]["code"] in ("forbidden", "invalid")
    results = admin.push([change("insert", "agencyTasks", agency, odd, {"_id": odd, "title": "t", "status": "open",
                                                                       "team": other_team[5:]})])
    assert results[0]["error"]["code"] == "invalid"
    assert ("tasks", odd) not in server_state(other_team)
    # Unassigning (or deleting the agency's task) deletes the copy.
    assert admin.push([change("delete", "agencyTasks", agency, tid)])[0]["status"] == "applied"
    assert ("tasks", tid) not in server_state(team)
    deleted = [c for c in writer.pull({team: None})[team]["changes"] if c["id"] == tid]
    assert deleted == [] or deleted[0]["op"] == "delete"


def test_archived_teams_are_read_only(world):
    admin = world["admin"]
    team = new_team(admin.email, world["key"], "Old crew")
    member = Client(new_user(agency=world["key"]))
    assert grant(admin, team, "user", member.id, "write").status_code == 200
    conn = worker_db()
    try:
        with conn.cursor() as cur:
            claim(cur, admin.id, "agencyAdmin", world["key"])
            cur.execute("select app.update_team(%s, null, null, true)", (team,))
        conn.commit()
    finally:
        conn.close()
    assert member.pull({team: None})[team]["status"] == "ok"
    d = f"a-{uuid.uuid4().hex}"
    assert member.push([change("insert", "tasks", team, d, doc_for("tasks", d))])[0]["error"]["code"] == "forbidden"


def test_unauthenticated_and_malformed_requests(world):
    team = world["team"]
    anonymous = CASession()
    error_of(anonymous.get(URL + "/api/v1/me/grants"), 401, "unauthenticated")
    error_of(anonymous.get(URL + "/api/v1/grants", params={"partition": team}), 401, "unauthenticated")
    admin = world["admin"]
    error_of(admin.http.put(URL + "/api/v1/grants", data="{", headers={"Content-Type": "application/json"}), 400, "bad_request")
    error_of(admin.http.put(URL + "/api/v1/grants", json={"partition": team, "grantee": {"kind": "everyone"},
                                                          "right": "read", "extra": 1}), 400, "bad_request")
    error_of(admin.http.get(URL + "/api/v1/grants", params={"partition": "team=nope"}), 422, "invalid")
    error_of(admin.http.get(URL + "/api/v1/grants", params={"partition": f"team={uuid.uuid4()}"}), 404, "not_found")
    error_of(admin.http.post(URL + "/api/v1/grants", json={}), 405, "method_not_allowed")


def test_the_sync_inspector_explains_team_rights(world):
    """"Why can't this user see X" names the grants (or their absence) for a team's document."""
    team = world["team"]
    with admin_db() as conn, conn.cursor() as cur:
        cur.execute("select id from sync.tasks where partition = %s and not deleted limit 1", (team,))
        doc_id = cur.fetchone()[0]
        cur.execute("select id::text from app.users where role = 'globalAdmin' and email = 'admin@demo.tideway'")
        admin_id = cur.fetchone()[0]
    conn = worker_db()
    try:
        with conn.cursor() as cur:
            claim(cur, admin_id, "globalAdmin")
            answers = {}
            for case in ("officer, read", "officer, no grant", "other agency's officer, agency grant read"):
                cur.execute("select readable, rule from app.explain_access(%s, %s) where collection = 'tasks'",
                            (world["clients"][case].id, doc_id))
                answers[case] = cur.fetchone()
        conn.rollback()
    finally:
        conn.close()
    assert answers["officer, read"][0] is True and "their own read grant" in answers["officer, read"][1]
    assert answers["officer, no grant"][0] is False and "no grant on team 'Boat crew'" in answers["officer, no grant"][1]
    agency_case = answers["other agency's officer, agency grant read"]
    assert agency_case[0] is True and "a read grant to agency" in agency_case[1]
