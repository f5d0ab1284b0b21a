"""The Python column of the compatibility matrix (docs/COMPATIBILITY.md).

Debian's python3-redis (redis-py) Lock, unmodified, against deadbolt:

    /usr/bin/python3 locks.py MODE

MODE is single or direct (redis.Redis on one address) or sentinel
(redis.sentinel.Sentinel over COMPAT_SENTINELS). The phase and addresses
come from the environment (COMPAT_*, set by cmd/deadbolt-compat). In the
check phase the transcript runs and the exit code says how it went; in the
failover phase two threads contend for one lock, READY is printed once both
have held it; KILLING on stdin is answered with ARMED (errors from then on
are the kill's), and after KILLED the run ends well once the lock has been
granted three more times. Errors are counted and reported
on the RECOVERED line; the runner judges those before the kill.
"""

import os
import sys
import threading
import time

import redis
from redis.exceptions import LockError, LockNotOwnedError
from redis.sentinel import Sentinel

START = time.monotonic()


def log(msg):
    print("%7.3fs %s" % (time.monotonic() - START, msg), flush=True)


class Fail(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise Fail(msg)


def split(v):
    return [a.strip() for a in (v or "").split(",") if a.strip()]


def hostport(addr):
    h, p = addr.rsplit(":", 1)
    return h, int(p)


class Env:
    def __init__(self, mode):
        self.mode = mode
        self.phase = os.environ.get("COMPAT_PHASE", "check")
        self.addrs = split(os.environ.get("COMPAT_ADDRS"))
        self.direct = os.environ.get("COMPAT_DIRECT") or (self.addrs[0] if self.addrs else "")
        self.sentinels = split(os.environ.get("COMPAT_SENTINELS"))
        self.master = os.environ.get("COMPAT_MASTER") or "mymaster"
        self.prefix = os.environ.get("COMPAT_PREFIX") or "compat-py-%d:" % time.time_ns()
        self.limit = float(os.environ.get("COMPAT_TIMEOUT", "90s").rstrip("s"))
        # The ACL user every connection logs in as.
        self.user = os.environ.get("COMPAT_USER") or None
        self.password = os.environ.get("COMPAT_PASS") or None

    def key(self, name):
        return self.prefix + name

    def client(self):
        """A client as an application makes one for the mode."""
        if self.mode in ("single", "direct"):
            h, p = hostport(self.direct)
            return redis.Redis(host=h, port=p, socket_timeout=5, socket_connect_timeout=2,
                               username=self.user, password=self.password)
        if self.mode == "sentinel":
            auth = {"username": self.user, "password": self.password}
            s = Sentinel([hostport(a) for a in self.sentinels], socket_timeout=2, sentinel_kwargs=dict(auth))
            self.sentinel = s
            return s.master_for(self.master, socket_timeout=5, socket_connect_timeout=2, **auth)
        raise Fail("no redis-py client for mode %s" % self.mode)


def refused(env, r):
    """The run's ACL user is held to its rules: FLUSHALL is refused with
    NOPERM for the command, and EVALSHA (which the user may run) given a key
    outside the run's prefix with NOPERM for the key, before any script is
    looked up."""
    expect(env.user, "COMPAT_USER is not set: the matrix runs every client as a limited ACL user")
    log("--- ACL: the user %s may not go outside its rules" % env.user)
    sha = "0" * 40
    for args, want in (
        (("FLUSHALL",), "this user has no permissions to run the 'flushall' command"),
        (("EVALSHA", sha, 1, "compat:outside:" + env.user), "this user has no permissions to access one of the keys used as arguments"),
    ):
        try:
            got = r.execute_command(*args)
        except redis.exceptions.NoPermissionError as e:
            expect(str(e) == want, "%s as %s: NOPERM %s, want NOPERM %s" % (args[0], env.user, e, want))
            log("%s: NOPERM %s" % (args[0], e))
            continue
        except redis.RedisError as e:
            raise Fail("%s as %s raised %s: %s, want NOPERM" % (" ".join(map(str, args)), env.user, type(e).__name__, e))
        raise Fail("%s as %s answered %r, want NOPERM" % (" ".join(map(str, args)), env.user, got))


def check(env):
    r = env.client()
    expect(r.ping(), "PING")
    refused(env, r)

    if env.mode == "sentinel":
        log("--- Sentinel discovery")
        master = env.sentinel.discover_master(env.master)
        expect(master[0] and master[1] > 0, "discover_master = %r" % (master,))
        want = len(env.addrs) - 1
        replicas = env.sentinel.discover_slaves(env.master)
        expect(len(replicas) == want, "discover_slaves = %r, want %d replicas" % (replicas, want))
        expect(master not in replicas, "the master %r is among the replicas %r" % (master, replicas))
        log("master %s:%d, replicas %r" % (master[0], master[1], replicas))

    log("--- acquire, owned, extend, reacquire, release")
    name = env.key("lock:1")
    lock = r.lock(name, timeout=2)
    expect(lock.acquire(blocking=False), "acquire of a free lock")
    expect(lock.owned(), "owned() after acquire")
    expect(r.get(name) == lock.local.token, "GET %s = %r, want the lock's token" % (name, r.get(name)))
    pttl = r.pttl(name)
    expect(0 < pttl <= 2000, "PTTL after acquire = %d, want within 2000" % pttl)
    expect(lock.extend(3), "extend(3)")
    pttl = r.pttl(name)
    expect(3000 < pttl <= 5000, "PTTL after extend(3) = %d, want about 5000 (added)" % pttl)
    expect(lock.extend(1, replace_ttl=True), "extend(1, replace_ttl=True)")
    pttl = r.pttl(name)
    expect(0 < pttl <= 1000, "PTTL after extend(1, replace_ttl) = %d, want within 1000" % pttl)
    expect(lock.reacquire(), "reacquire")
    pttl = r.pttl(name)
    expect(1000 < pttl <= 2000, "PTTL after reacquire = %d, want back near 2000" % pttl)

    log("--- blocking timeout, a second owner")
    other = r.lock(name, timeout=2, blocking_timeout=0.3)
    began = time.monotonic()
    expect(not other.acquire(), "a second owner acquired a held lock")
    took = time.monotonic() - began
    # redis-py gives up when its next 0.1 s sleep would pass the timeout.
    expect(0.15 <= took < 3, "acquire gave up after %.2fs, want about the 0.3 s blocking timeout" % took)
    expect(not other.owned(), "owned() of the second owner")
    expect(other.locked(), "locked() says the held lock is free")
    lock.release()
    expect(r.exists(name) == 0, "the key survived release")
    expect(not lock.owned(), "owned() after release")
    try:
        lock.release()
        raise Fail("a second release did not raise")
    except LockNotOwnedError:
        raise Fail("a second release raised LockNotOwnedError, want LockError (no token left)")
    except LockError:
        pass
    log("--- a released lock taken by another owner: LockNotOwnedError")
    expect(lock.acquire(blocking=False), "acquire again")
    r.set(name, "someone-else", px=2000)
    expect(not lock.owned(), "owned() after another owner took the key")
    try:
        lock.release()
        raise Fail("release of a lock another owner holds did not raise")
    except LockNotOwnedError:
        pass
    expect(r.get(name) == b"someone-else", "release removed another owner's lock")

    log("--- expiry: extend, reacquire and release raise LockNotOwnedError")
    short = r.lock(env.key("lock:2"), timeout=0.3)
    expect(short.acquire(blocking=False), "acquire")
    time.sleep(0.6)
    expect(not short.owned(), "owned() after the lease ran out")
    for what, call in (("extend", lambda: short.extend(1)), ("reacquire", short.reacquire), ("release", short.release)):
        try:
            call()
            raise Fail("%s of an expired lock did not raise" % what)
        except LockNotOwnedError:
            pass

    log("--- a blocking acquire waits for the holder's release")
    holder = r.lock(env.key("lock:3"), timeout=10, thread_local=False)  # released by another thread
    expect(holder.acquire(blocking=False), "acquire")

    def let_go():
        time.sleep(0.4)
        holder.release()

    t = threading.Thread(target=let_go)
    t.start()
    waiter = r.lock(env.key("lock:3"), timeout=5, blocking_timeout=5)
    began = time.monotonic()
    got = waiter.acquire()
    took = time.monotonic() - began
    t.join()
    expect(got, "blocking acquire did not get the lock after its release")
    expect(0.3 <= took < 3, "granted after %.2fs, want soon after the release at 0.4 s" % took)
    waiter.release()

    log("--- the lock as a context manager")
    with r.lock(env.key("lock:4"), timeout=5, blocking_timeout=1):
        expect(r.exists(env.key("lock:4")) == 1, "the lock is not held inside with")
        try:
            with r.lock(env.key("lock:4"), timeout=5, blocking_timeout=0.2):
                raise Fail("a held lock was entered twice")
        except LockError:
            pass
    expect(r.exists(env.key("lock:4")) == 0, "the lock outlived with")


def failover(env):
    lock_name = env.key("lock:failover")
    state = {"inside": 0, "overlap": None, "grants": [0, 0], "armed": False, "killed_at": None, "after": 0,
             "errs_before": 0, "errs_after": 0, "last_err": ""}
    mu = threading.Lock()
    stop = threading.Event()

    def hold():
        with mu:
            state["inside"] += 1
            if state["inside"] > 1:
                state["overlap"] = "%d holders of the lock" % state["inside"]
        time.sleep(0.02)
        with mu:
            state["inside"] -= 1

    def worker(w):
        r = env.client()
        while not stop.is_set():
            began = time.monotonic()
            err = None
            ok = False
            try:
                lock = r.lock(lock_name, timeout=4, blocking_timeout=0.3)
                if lock.acquire():
                    ok = True
                    hold()
                    lock.release()
            except (redis.RedisError, LockError) as e:
                err = "%s: %s" % (type(e).__name__, e)
            with mu:
                killed = state["killed_at"] is not None
                if err:
                    state["errs_after" if (killed or state["armed"]) else "errs_before"] += 1
                    state["last_err"] = err
                elif ok:
                    state["grants"][w] += 1
                    if killed and began > state["killed_at"]:
                        state["after"] += 1
            if err:
                log("worker %d: %s" % (w, err))
            time.sleep(0.25)

    threads = [threading.Thread(target=worker, args=(w,), daemon=True) for w in (0, 1)]
    for t in threads:
        t.start()

    killed = threading.Event()
    eof = threading.Event()

    def read_stdin():
        for line in sys.stdin:
            if line.strip() == "KILLING":
                with mu:
                    state["armed"] = True
                print("ARMED", flush=True)
            elif line.strip() == "KILLED":
                killed.set()
                return
        eof.set()

    threading.Thread(target=read_stdin, daemon=True).start()
    ready = False
    deadline = START + env.limit
    try:
        while True:
            with mu:
                s = dict(state, grants=list(state["grants"]))
            if s["overlap"]:
                raise Fail("mutual exclusion broken: " + s["overlap"])
            if not ready and s["grants"][0] and s["grants"][1]:
                ready = True
                log("both workers have held the lock")
                print("READY", flush=True)
            if s["killed_at"] is not None and s["after"] >= 3:
                log("RECOVERED: %d grants %.1fs after the kill; errors: %d before the kill, %d after (last: %s)" % (
                    s["after"], time.monotonic() - s["killed_at"], s["errs_before"], s["errs_after"], s["last_err"]))
                return
            if killed.is_set() and s["killed_at"] is None:
                with mu:
                    state["killed_at"] = time.monotonic()
                log("KILLED received")
            if eof.is_set():
                raise Fail("stdin closed before KILLED")
            if time.monotonic() > deadline:
                raise Fail("deadline: ready=%s grants=%r after kill=%d errors before/after kill=%d/%d (last: %s)" % (
                    ready, s["grants"], s["after"], s["errs_before"], s["errs_after"], s["last_err"]))
            time.sleep(0.02)
    finally:
        stop.set()


def main(argv):
    if len(argv) != 2:
        print("usage: locks.py MODE", file=sys.stderr)
        return 2
    env = Env(argv[1])
    log("redis-py %s, mode %s, phase %s" % (redis.__version__, env.mode, env.phase))
    try:
        if env.phase == "check":
            check(env)
        else:
            failover(env)
    except Fail as e:
        print("locks.py: FAIL after %.1fs: %s" % (time.monotonic() - START, e), file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
