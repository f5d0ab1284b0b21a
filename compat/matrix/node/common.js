'use strict';
// What every Node suite of the matrix shares: the run's environment, the
// ioredis client for a connection mode, checks, and the failover harness.

const Redis = require('ioredis');

const START = Date.now();

function log(msg) {
  process.stdout.write(`${((Date.now() - START) / 1000).toFixed(3).padStart(7)}s ${msg}\n`);
}

class Fail extends Error {}

function expect(cond, msg) {
  if (!cond) throw new Fail(msg);
}

// expectReject runs fn and fails unless it throws; it returns the error.
async function expectReject(fn, what, test) {
  try {
    await fn();
  } catch (e) {
    if (test && !test(e)) throw new Fail(`${what}: threw ${e && e.name}: ${e && e.message}, not the error expected`);
    return e;
  }
  throw new Fail(`${what}: did not throw`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function split(v) {
  return (v || '').split(',').map((s) => s.trim()).filter(Boolean);
}

function hostPort(addr) {
  const i = addr.lastIndexOf(':');
  return { host: addr.slice(0, i), port: Number(addr.slice(i + 1)) };
}

class Env {
  constructor(mode) {
    this.mode = mode;
    this.phase = process.env.COMPAT_PHASE || 'check';
    this.addrs = split(process.env.COMPAT_ADDRS);
    this.direct = process.env.COMPAT_DIRECT || this.addrs[0];
    this.sentinels = split(process.env.COMPAT_SENTINELS);
    this.master = process.env.COMPAT_MASTER || 'mymaster';
    this.prefix = process.env.COMPAT_PREFIX || `compat-node-${Date.now()}:`;
    this.dead = process.env.COMPAT_DEAD || '';
    this.limitMs = 1000 * parseFloat((process.env.COMPAT_TIMEOUT || '90s').replace(/s$/, ''));
    // The ACL user every connection logs in as (COMPAT_USER, COMPAT_PASS).
    this.user = process.env.COMPAT_USER || '';
    this.pass = process.env.COMPAT_PASS || '';
    this.clients = [];
  }

  key(name) {
    return this.prefix + name;
  }

  // options are the ioredis options for the mode, as an application
  // writes them: one address (single, direct), the Sentinels (sentinel) or
  // the cluster's nodes (cluster).
  options(asUser = true) {
    const auth = asUser ? this.auth() : {};
    switch (this.mode) {
      case 'single':
      case 'direct':
        return { kind: 'redis', options: { ...hostPort(this.direct), ...auth } };
      case 'sentinel':
        return {
          kind: 'redis',
          options: { sentinels: this.sentinels.map(hostPort), name: this.master, ...auth, sentinelUsername: auth.username, sentinelPassword: auth.password },
        };
      case 'cluster':
        return { kind: 'cluster', nodes: this.addrs.map(hostPort), options: { redisOptions: auth } };
    }
    throw new Fail(`no ioredis client for mode ${this.mode}`);
  }

  // auth is ioredis's (and node-redis's) username and password options.
  auth() {
    return this.user ? { username: this.user, password: this.pass } : {};
  }

  client() {
    const o = this.options();
    const c = o.kind === 'cluster' ? new Redis.Cluster(o.nodes, o.options) : new Redis(o.options);
    c.on('error', (e) => log(`ioredis error: ${e.message}`));
    this.clients.push(c);
    return c;
  }

  // inspector is a client of the default user, for what a suite checks
  // beyond what its client does (KEYS): not the run's limited user.
  inspector() {
    const o = this.options(false);
    const c = o.kind === 'cluster' ? new Redis.Cluster(o.nodes, o.options) : new Redis(o.options);
    c.on('error', (e) => log(`ioredis (inspector) error: ${e.message}`));
    this.clients.push(c);
    return c;
  }

  // nodes returns one client per independent node (redlock3).
  nodes() {
    return this.addrs.map((a) => {
      const c = new Redis({ ...hostPort(a), ...this.auth() });
      c.on('error', (e) => log(`ioredis error: ${e.message}`));
      this.clients.push(c);
      return c;
    });
  }

  // deadNode is a client of an address nothing listens on.
  deadNode() {
    expect(this.dead, 'COMPAT_DEAD is not set');
    const c = new Redis({ ...hostPort(this.dead), ...this.auth(), maxRetriesPerRequest: 0, retryStrategy: () => 200, enableOfflineQueue: false });
    c.on('error', () => {});
    this.clients.push(c);
    return c;
  }

  async close() {
    await Promise.allSettled(this.clients.map((c) => c.quit().catch(() => c.disconnect())));
    for (const c of this.clients) c.disconnect();
  }
}

// failover runs two workers that contend for one lock (each worker's
// cycle(hold) tries once, calls hold when granted, and releases); it prints
// READY once both have held it, answers KILLING on stdin with ARMED (errors
// from then on are the kill's) and, after KILLED, returns once the lock has
// been granted three more times by cycles begun after the kill. Two holders at once fail the run; errors are counted and reported
// on the RECOVERED line (the runner judges those before the kill).
async function failover(env, makeCycle) {
  const st = { inside: 0, overlap: null, grants: [0, 0], armed: false, killedAt: null, after: 0, errsBefore: 0, errsAfter: 0, lastErr: '' };
  let stop = false;
  const hold = async () => {
    st.inside++;
    if (st.inside > 1) st.overlap = `${st.inside} holders of the lock`;
    await sleep(20);
    st.inside--;
  };
  const workers = [0, 1].map(async (w) => {
    const cycle = await makeCycle(w);
    while (!stop) {
      const began = Date.now();
      let err = null;
      let ok = false;
      try {
        ok = await withTimeout(cycle(hold), 6000);
      } catch (e) {
        err = `${e && e.name}: ${e && e.message}`;
      }
      if (stop) break;
      if (err) {
        if (st.armed || st.killedAt !== null) st.errsAfter++;
        else st.errsBefore++;
        st.lastErr = err;
        log(`worker ${w}: ${err}`);
      } else if (ok) {
        st.grants[w]++;
        if (st.killedAt !== null && began > st.killedAt) st.after++;
      }
      await sleep(250);
    }
  });
  let killed = false;
  let eof = false;
  let buf = '';
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (d) => {
    buf += d;
    const lines = buf.split('\n').map((l) => l.trim());
    if (!st.armed && lines.includes('KILLING')) {
      st.armed = true;
      process.stdout.write('ARMED\n');
    }
    if (lines.includes('KILLED')) killed = true;
  });
  process.stdin.on('end', () => { eof = true; });
  const deadline = START + env.limitMs;
  let ready = false;
  try {
    for (;;) {
      if (st.overlap) throw new Fail(`mutual exclusion broken: ${st.overlap}`);
      if (!ready && st.grants[0] && st.grants[1]) {
        ready = true;
        log('both workers have held the lock');
        process.stdout.write('READY\n');
      }
      if (st.killedAt !== null && st.after >= 3) {
        log(`RECOVERED: ${st.after} grants ${((Date.now() - st.killedAt) / 1000).toFixed(1)}s after the kill; errors: ${st.errsBefore} before the kill, ${st.errsAfter} after (last: ${st.lastErr})`);
        return;
      }
      if (killed && st.killedAt === null) {
        st.killedAt = Date.now();
        log('KILLED received');
      }
      if (eof && !killed) throw new Fail('stdin closed before KILLED');
      if (Date.now() > deadline) {
        throw new Fail(`deadline: ready=${ready} grants=${st.grants} after kill=${st.after} errors before/after kill=${st.errsBefore}/${st.errsAfter} (last: ${st.lastErr})`);
      }
      await sleep(20);
    }
  } finally {
    stop = true;
    process.stdin.pause();
    await Promise.race([Promise.allSettled(workers), sleep(7000)]);
  }
}

function withTimeout(p, ms) {
  let t;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise((_, reject) => { t = setTimeout(() => reject(new Error(`cycle took over ${ms} ms`)), ms); }),
  ]);
}

// expectRESP3 fails the suite unless c's connection speaks RESP3: ioredis 6
// sends HELLO 3 and falls back to RESP2 when it is refused, so working
// locks alone do not show that RESP3 works. It reads the resp= field of
// the client's own CLIENT INFO.
async function expectRESP3(c) {
  const info = String(await c.call('CLIENT', 'INFO'));
  expect(` ${info.trim()} `.includes(' resp=3 '), `the connection speaks RESP2 after ioredis's HELLO 3: CLIENT INFO ${JSON.stringify(info)}`);
  log('protocol: RESP3 (CLIENT INFO resp=3)');
}

// expectRefused checks that the run's ACL user is held to its rules:
// send(args) sends a command through the suite's own client; FLUSHALL must
// fail with NOPERM for the command, and EVAL (which every Node suite's user
// may run) given a key outside the run's prefix with NOPERM for the key.
async function expectRefused(env, send) {
  expect(env.user, 'COMPAT_USER is not set: the matrix runs every client as a limited ACL user');
  log(`--- ACL: the user ${env.user} may not go outside its rules`);
  const cases = [
    [['FLUSHALL'], "NOPERM this user has no permissions to run the 'flushall' command"],
    [['EVAL', 'return 1', '1', `compat:outside:${env.user}`], 'NOPERM this user has no permissions to access one of the keys used as arguments'],
  ];
  for (const [args, want] of cases) {
    const e = await expectReject(() => send(args), args[0], (err) => err && err.message === want);
    log(`${args[0]}: ${e.message}`);
  }
}

module.exports = { Env, Fail, expect, expectReject, expectRefused, expectRESP3, failover, log, sleep, hostPort };
