"""A tiny sync client for the tests: push, pull until `more` is false, keep a local copy."""
import uuid

from conftest import api


class SyncClient:
    def __init__(self, access_token, client_id=None):
        self.token = access_token
        self.client_id = client_id or "test-" + uuid.uuid4().hex[:8]
        self.cursors = {}
        self.docs = {}  # partition -> {(collection, id): doc}
        self._n = 0

    def change_id(self):
        self._n += 1
        return f"{self.client_id}-{self._n}"

    def push(self, *changes, expect=200):
        body = {"clientId": self.client_id, "changes": [dict(c, changeId=c.get("changeId") or self.change_id()) for c in changes]}
        r = api("POST", "/api/v1/sync/push", self.token, json=body)
        assert r.status_code == expect, r.text
        return r.json()["results"] if expect == 200 else r.json()

    def push_one(self, change):
        return self.push(change)[0]

    def pull(self, *partitions, limit=1000, wait=0):
        """Pulls until `more` is false; answers the last status of each partition."""
        statuses = {}
        pending = list(partitions)
        while pending:
            body = {"partitions": {p: self.cursors.get(p) for p in pending}, "limit": limit, "wait": wait}
            r = api("POST", "/api/v1/sync/pull", self.token, json=body)
            assert r.status_code == 200, r.text
            answer = r.json()["partitions"]
            pending = []
            for p, part in answer.items():
                statuses[p] = part["status"]
                if part["status"] != "ok":
                    if part["status"] in ("forbidden", "reset"):
                        self.docs.pop(p, None)
                        self.cursors.pop(p, None)
                    continue
                store = self.docs.setdefault(p, {})
                for ch in part["changes"]:
                    key = (ch["collection"], ch["id"])
                    if ch["op"] == "delete":
                        store.pop(key, None)
                    else:
                        store[key] = ch["doc"]
                self.cursors[p] = part["cursor"]
                if part["more"]:
                    pending.append(p)
        return statuses

    def doc(self, partition, collection, doc_id):
        return self.docs.get(partition, {}).get((collection, doc_id))
