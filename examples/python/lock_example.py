#!/usr/bin/env python3
"""A leasehold client in Python, on stubs generated from proto/ with grpcio-tools (see README.md).

It takes a lock and writes to a resource that checks the fencing token, renews and releases it, shows a
stale token refused by the resource after the lock moved on, then runs a critical section under a session
(one lease for the holds, renewed in the background) and closes it.

Environment: LEASEHOLD_ENDPOINTS (default 127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003) and
LEASEHOLD_PY_STUBS, the directory the stubs were generated into (default ./gen beside this file).
"""

import contextlib
import os
import sqlite3
import sys
import threading
import time
import uuid

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.environ.get("LEASEHOLD_PY_STUBS", os.path.join(HERE, "gen")))
from leasehold.v1 import lock_pb2, lock_pb2_grpc  # noqa: E402  (generated; on the path just above)

ENDPOINTS = os.environ.get("LEASEHOLD_ENDPOINTS", "127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003").split(",")
TTL_MS = 10_000
SESSION_TTL_MS = 1_500
WORK_S = 2.0  # the critical section outlasts the session's ttl: only its renewals keep the hold
CALL_TIMEOUT_S = 5


class Cluster:
    """Calls any member (every member serves every call: followers forward to the leader); on UNAVAILABLE
    (that member is down or has no leader yet) the same request, with the same request_id, goes to the next
    one, so a retry can never take a second lock."""

    def __init__(self, endpoints):
        self.stubs = [lock_pb2_grpc.LockStub(grpc.insecure_channel(e)) for e in endpoints]

    def call(self, method, request):
        last = None
        for _ in range(3):
            for stub in self.stubs:
                try:
                    return getattr(stub, method)(request, timeout=CALL_TIMEOUT_S)
                except grpc.RpcError as err:
                    if err.code() != grpc.StatusCode.UNAVAILABLE:
                        raise
                    last = err
        raise last


class FencedResource:
    """The protected side: accepts a write only with a token newer than every token it has accepted,
    checked atomically with the write (SPEC: the resource must check the token itself)."""

    def __init__(self):
        self.db = sqlite3.connect(":memory:")
        self.db.execute("CREATE TABLE resource (name TEXT PRIMARY KEY, last_token INTEGER NOT NULL, data TEXT)")
        self.db.execute("INSERT INTO resource VALUES ('report', 0, NULL)")

    def write(self, token, data):
        cur = self.db.execute(
            "UPDATE resource SET last_token = ?, data = ? WHERE name = 'report' AND last_token < ?", (token, data, token)
        )
        self.db.commit()
        return cur.rowcount == 1

    def last_token(self):
        return self.db.execute("SELECT last_token FROM resource WHERE name = 'report'").fetchone()[0]


def rid():
    return uuid.uuid4().hex


def must(ok, what):
    if not ok:
        sys.exit(f"unexpected: {what}")


@contextlib.contextmanager
def session(cluster, owner, ttl_ms):
    """A session renewed every ttl/3 while the block runs, closed after it (which releases its holds)."""
    opened = cluster.call("OpenSession", lock_pb2.OpenSessionRequest(owner=owner, ttl_ms=ttl_ms, request_id=rid()))
    sid = opened.session_id
    print(f"session {sid} opened (ttl {opened.ttl_ms} ms)")
    stop = threading.Event()
    state = {"lost": threading.Event(), "renewals": 0}

    def keep_alive():
        while not stop.wait(ttl_ms / 3000):
            r = cluster.call("RenewSession", lock_pb2.RenewSessionRequest(session_id=sid, owner=owner, request_id=rid()))
            if not r.renewed:
                state["lost"].set()  # it ran out: its holds are gone, and the work must stop
                return
            state["renewals"] += 1

    renewer = threading.Thread(target=keep_alive, daemon=True)
    renewer.start()
    try:
        yield sid, state
    finally:
        stop.set()
        renewer.join()
        closed = cluster.call("CloseSession", lock_pb2.CloseSessionRequest(session_id=sid, owner=owner, request_id=rid()))
        print(f"session {sid} closed: released {', '.join(closed.released) or 'nothing'}")


def main():
    cluster = Cluster(ENDPOINTS)
    resource = FencedResource()
    key = "py-example/report"

    # 1. Acquire: the token is the fencing token every write carries.
    got = cluster.call("Acquire", lock_pb2.AcquireRequest(key=key, owner="py-worker", ttl_ms=TTL_MS, request_id=rid()))
    must(got.acquired, f"{key} is held by {got.holder_owner}")
    token = got.token
    print(f"acquired {key}: token {token} (ttl {got.ttl_ms} ms)")
    must(resource.write(token, "draft 1"), "the first write was refused")
    print(f"fenced write with token {token}: accepted")

    # 2. Renew (owner and token must match the current hold), then release.
    renewed = cluster.call("Renew", lock_pb2.RenewRequest(key=key, owner="py-worker", token=token, ttl_ms=TTL_MS, request_id=rid()))
    must(renewed.renewed, f"renew refused: {lock_pb2.Reason.Name(renewed.reason)}")
    print(f"renewed {key}: ttl {renewed.ttl_ms} ms")
    released = cluster.call("Release", lock_pb2.ReleaseRequest(key=key, owner="py-worker", token=token, request_id=rid()))
    must(released.released, f"release refused: {lock_pb2.Reason.Name(released.reason)}")
    print(f"released {key}")

    # 3. The lock moves on: the next holder's token is higher, and the old token is refused — by the lock
    #    service (a late release) and by the resource (a late write).
    nxt = cluster.call("Acquire", lock_pb2.AcquireRequest(key=key, owner="py-other", ttl_ms=TTL_MS, request_id=rid()))
    must(nxt.acquired and nxt.token > token, "the next acquire did not get a higher token")
    print(f"next holder py-other got token {nxt.token} (> {token})")
    must(resource.write(nxt.token, "draft 2"), "the new holder's write was refused")
    print(f"fenced write with token {nxt.token}: accepted")
    late = cluster.call("Release", lock_pb2.ReleaseRequest(key=key, owner="py-worker", token=token, request_id=rid()))
    must(not late.released, "a stale release was accepted")
    print(f"late release with token {token}: refused ({lock_pb2.Reason.Name(late.reason)})")
    must(not resource.write(token, "stale"), "a stale write was accepted")
    print(f"fenced write with stale token {token}: rejected (the resource has seen {resource.last_token()})")
    cluster.call("Release", lock_pb2.ReleaseRequest(key=key, owner="py-other", token=nxt.token, request_id=rid()))

    # 4. A critical section under a session: the hold has no lease of its own (ttl_ms 0) and lives as
    #    long as the session, which the background thread renews.
    with session(cluster, "py-worker", SESSION_TTL_MS) as (sid, state):
        crit = "py-example/critical"
        held = cluster.call(
            "Acquire", lock_pb2.AcquireRequest(key=crit, owner="py-worker", ttl_ms=0, session_id=sid, request_id=rid())
        )
        must(held.acquired, f"{crit} is held by {held.holder_owner}")
        print(f"critical section under session {sid}: {crit} token {held.token}")
        time.sleep(WORK_S)  # the work
        now = cluster.call("Get", lock_pb2.GetRequest(key=crit))
        must(not state["lost"].is_set() and now.held and now.token == held.token, "the session's hold was lost")
        must(resource.write(held.token, "final"), "the critical section's write was refused")
        print(
            f"after {int(WORK_S * 1000)} ms of work (session ttl {SESSION_TTL_MS} ms): still held with token {held.token}, "
            f"session renewed {state['renewals']} times, fenced write accepted"
        )
    print("done")


if __name__ == "__main__":
    main()
