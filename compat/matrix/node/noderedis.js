'use strict';
// node-redis (the npm package `redis`) as its users write a lock with it:
// SET key token NX PX to take it, a compare-and-pexpire script by EVAL to
// extend it, a compare-and-delete script to release it — by EVAL, by
// EVALSHA after SCRIPT LOAD, and as a script defined with defineScript
// (EVALSHA, NOSCRIPT → EVAL). Two majors, installed side by side under
// npm aliases (package.json):
//
//   noderedis4  redis 4.x (alias redis4), RESP2 (4.x has no RESP3):
//               createClient, createCluster; no Sentinel client;
//   noderedis5  redis 5.x (alias redis5), createClient({ RESP: 3 }),
//               createSentinel, createCluster, all with RESP: 3.
//
// Each checks with the client's own CLIENT INFO which protocol its
// connection ended up on: resp=2 for 4.x, resp=3 for 5.x (5.x sends
// HELLO 3; a connection left on RESP2 fails the run).

const crypto = require('crypto');
const { Fail, expect, expectRefused, log, sleep, hostPort } = require('./common');

// The scripts: compare the token, then extend or delete.
const EXTEND = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";
const RELEASE = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

const sha1 = (s) => crypto.createHash('sha1').update(s).digest('hex');
const token = () => crypto.randomUUID();

// giveUp is the reconnectStrategy of the Sentinel and Cluster clients'
// node connections: three tries, then the node counts as gone. With the
// default (retry forever) neither client leaves a master that is down for
// good (docs/COMPATIBILITY.md, "node-redis and a dead master"): the
// Sentinel client (5.x) waits in connect() for the master the Sentinels
// named, and the Cluster client (4.x, 5.x) keeps its commands for the
// dead master's connection, learning the slots again only on MOVED/ASK.
function giveUp(retries, cause) {
  if (retries < 3) return 100 * (retries + 1);
  return new Error(`gave up reconnecting after ${retries} tries (${cause && cause.message})`);
}

// connect opens the client of env's mode for node-redis major (4 or 5),
// with the release script of the run defined as client.releaseLock(key,
// token) (defineScript; its text carries the run's prefix so that its first
// call meets NOSCRIPT and falls back to EVAL). It returns a handle with the
// lock operations.
async function connect(major, env, script) {
  const redis = require(major === 4 ? 'redis4' : 'redis5');
  const resp = major === 4 ? {} : { RESP: 3 };
  const scripts = { releaseLock: defineRelease(redis, major, script) };
  const onError = (what) => (e) => log(`node-redis ${what} error: ${e && e.message ? e.message : e}`);
  let c;
  let kind = 'client';
  switch (env.mode) {
    case 'single':
    case 'direct':
      c = redis.createClient({ socket: hostPort(env.direct), ...env.auth(), scripts, ...resp });
      break;
    case 'sentinel':
      if (major === 4) throw new Fail('node-redis 4 has no Sentinel client');
      kind = 'sentinel';
      c = redis.createSentinel({
        name: env.master,
        sentinelRootNodes: env.sentinels.map(hostPort),
        nodeClientOptions: { socket: { reconnectStrategy: giveUp }, ...env.auth() },
        sentinelClientOptions: { ...env.auth() },
        passthroughClientErrorEvents: true,
        scripts,
        ...resp,
      });
      break;
    case 'cluster':
      kind = 'cluster';
      c = redis.createCluster({
        rootNodes: env.addrs.map((a) => ({ socket: hostPort(a) })),
        defaults: { socket: { reconnectStrategy: giveUp }, ...env.auth() },
        scripts,
        ...resp,
      });
      c.on('node-error', (e, node) => log(`node-redis cluster node ${node && node.host}:${node && node.port} error: ${e && e.message}`));
      break;
    default:
      throw new Fail(`no node-redis client for mode ${env.mode}`);
  }
  c.on('error', onError(kind));
  // Closing: QUIT (4.x) or close (5.x) for at most 2 s, then drop the
  // sockets: a client of a node that is down would wait for it.
  const close = major === 4 ? () => c.quit() : () => c.close();
  const destroy = major === 4 ? () => c.disconnect() : () => c.destroy();
  const drop = () => {
    try {
      const p = destroy();
      if (p && p.catch) p.catch(() => {});
    } catch (e) { /* closed already */ }
  };
  env.clients.push({
    quit: () => Promise.race([close(), sleep(2000).then(() => { throw new Error('close timed out'); })]),
    disconnect: drop,
  });
  try {
    await c.connect();
  } catch (e) {
    drop();
    throw e;
  }

  return {
    c,
    kind,
    drop,
    // acquire: SET key token NX PX ttl; true when granted.
    async acquire(key, tok, ttl) {
      const opts = major === 4 ? { NX: true, PX: ttl } : { condition: 'NX', expiration: { type: 'PX', value: ttl } };
      const r = await c.set(key, tok, opts);
      if (r !== 'OK' && r !== null) throw new Fail(`SET NX PX answered ${JSON.stringify(r)}`);
      return r === 'OK';
    },
    // extend: the compare-and-pexpire script by EVAL; 1 or 0.
    extend(key, tok, ttl) {
      return c.eval(EXTEND, { keys: [key], arguments: [tok, String(ttl)] });
    },
    // release: the compare-and-delete script defined with defineScript.
    release(key, tok) {
      return c.releaseLock(key, tok);
    },
    // raw sends a command of no key, routed (in a cluster) to key's node.
    raw(key, args) {
      if (kind === 'cluster') return c.sendCommand(key, false, args);
      if (kind === 'sentinel') return c.sendCommand(false, args);
      return c.sendCommand(args);
    },
    // ping: PING (a 4.x cluster has no ping: raw, to key's node).
    ping(key) {
      if (major === 4 && kind === 'cluster') return this.raw(key, ['PING']);
      return c.ping();
    },
    // scriptLoad: SCRIPT LOAD (a 4.x cluster has no scriptLoad: raw).
    scriptLoad(key, src) {
      if (major === 4 && kind === 'cluster') return this.raw(key, ['SCRIPT', 'LOAD', src]);
      return c.scriptLoad(src);
    },
    evalSha(sha, key, args) {
      return c.evalSha(sha, { keys: [key], arguments: args });
    },
  };
}

// defineRelease is the release script as each major's defineScript wants
// it: 4.x transforms the arguments (and names the key for a cluster),
// 5.x pushes them to a parser.
function defineRelease(redis, major, src) {
  if (major === 4) {
    return redis.defineScript({
      NUMBER_OF_KEYS: 1,
      FIRST_KEY_INDEX: (key) => key,
      SCRIPT: src,
      transformArguments: (key, tok) => [key, tok],
      transformReply: (reply) => reply,
    });
  }
  return redis.defineScript({
    NUMBER_OF_KEYS: 1,
    SCRIPT: src,
    parseCommand(parser, key, tok) {
      parser.pushKey(key);
      parser.push(tok);
    },
    transformReply: (reply) => reply,
  });
}

// releaseScript is RELEASE with a comment naming the run, so that the
// server has not seen it before the run's first release.
function releaseScript(env) {
  return `${RELEASE} -- ${env.prefix}`;
}

// expectProtocol reads resp= from the client's own CLIENT INFO.
async function expectProtocol(h, key, want) {
  const info = String(await h.raw(key, ['CLIENT', 'INFO']));
  const m = / resp=(\d+) /.exec(` ${info.trim()} `);
  expect(m, `CLIENT INFO has no resp= field: ${JSON.stringify(info)}`);
  expect(m[1] === String(want), `the connection speaks RESP${m[1]}, want RESP${want}: CLIENT INFO ${JSON.stringify(info)}`);
  log(`protocol: RESP${want} (CLIENT INFO resp=${m[1]})`);
}

function suite(major) {
  const modes = major === 4 ? ['single', 'direct', 'cluster'] : ['single', 'sentinel', 'direct', 'cluster'];
  const wantRESP = major === 4 ? 2 : 3;

  async function check(env) {
    const src = releaseScript(env);
    const h = await connect(major, env, src);
    const other = await connect(major, env, src);
    const key = env.key('lock:1');
    expect((await h.ping(key)) === 'PONG', 'PING');
    await expectProtocol(h, key, wantRESP);
    await expectProtocol(other, key, wantRESP);

    log('--- acquire: SET NX PX; a second owner is refused');
    const mine = token();
    const theirs = token();
    expect(await h.acquire(key, mine, 2000), 'SET NX PX of a free key was refused');
    expect((await h.c.get(key)) === mine, 'GET is not the owner\'s token');
    let pttl = await h.c.pTTL(key);
    expect(pttl > 0 && pttl <= 2000, `PTTL after SET PX 2000 = ${pttl}`);
    expect(!(await other.acquire(key, theirs, 2000)), 'a second owner\'s SET NX PX was granted');
    expect((await other.c.get(key)) === mine, 'the second owner\'s SET NX PX changed the key');

    log('--- extend: compare-and-pexpire by EVAL');
    expect((await h.extend(key, mine, 5000)) === 1, 'the owner\'s extend did not answer 1');
    pttl = await h.c.pTTL(key);
    expect(pttl > 4000 && pttl <= 5000, `PTTL after extend to 5000 = ${pttl}`);
    expect((await other.extend(key, theirs, 60000)) === 0, 'another owner\'s extend did not answer 0');
    pttl = await h.c.pTTL(key);
    expect(pttl > 0 && pttl <= 5000, `another owner's extend changed the TTL: PTTL ${pttl}`);

    log('--- release: compare-and-delete (defineScript: EVALSHA, NOSCRIPT, EVAL)');
    const sha = sha1(src);
    const before = await h.raw(key, ['SCRIPT', 'EXISTS', sha]);
    expect(Array.isArray(before) && before.length === 1 && before[0] === 0, `SCRIPT EXISTS of the run's script before its first call = ${JSON.stringify(before)}, want [0]`);
    expect((await other.release(key, theirs)) === 0, 'another owner\'s release did not answer 0');
    expect((await h.c.get(key)) === mine, 'another owner\'s release changed the key');
    const known = await h.raw(key, ['SCRIPT', 'EXISTS', sha]);
    expect(Array.isArray(known) && known.length === 1 && known[0] === 1, `SCRIPT EXISTS after the fallback EVAL = ${JSON.stringify(known)}, want [1]`);
    expect((await h.release(key, mine)) === 1, 'the owner\'s release did not answer 1');
    expect((await h.c.exists(key)) === 0, 'the key survived release');
    expect((await h.release(key, mine)) === 0, 'a second release did not answer 0');
    expect(await other.acquire(key, theirs, 2000), 'SET NX PX after release was refused');

    log('--- SCRIPT LOAD and EVALSHA');
    expect((await h.scriptLoad(key, EXTEND)) === sha1(EXTEND), 'SCRIPT LOAD did not answer the script\'s SHA1');
    expect((await h.evalSha(sha1(EXTEND), key, [mine, '9000'])) === 0, 'EVALSHA extend by a non-owner did not answer 0');
    expect((await other.evalSha(sha1(EXTEND), key, [theirs, '9000'])) === 1, 'EVALSHA extend by the owner did not answer 1');
    pttl = await h.c.pTTL(key);
    expect(pttl > 8000 && pttl <= 9000, `PTTL after EVALSHA extend to 9000 = ${pttl}`);
    expect((await other.evalSha(sha, key, [theirs])) === 1, 'EVALSHA release by the owner did not answer 1');
    expect((await h.c.exists(key)) === 0, 'the key survived the EVALSHA release');

    log('--- lease expiry: a 300 ms lock runs out and is taken again');
    const short = env.key('lock:short');
    expect(await h.acquire(short, mine, 300), 'SET NX PX 300 was refused');
    expect(!(await other.acquire(short, theirs, 1000)), 'a held short lock was granted');
    await sleep(600);
    expect((await h.c.get(short)) === null, 'the lock did not expire after 600 ms of 300');
    expect(await other.acquire(short, theirs, 1000), 'SET NX PX after the lease ran out was refused');
    expect((await h.extend(short, mine, 5000)) === 0, 'the old owner extended a lock taken since');
    expect((await h.release(short, mine)) === 0, 'the old owner released a lock taken since');
    expect((await other.c.get(short)) === theirs, 'the old owner\'s calls changed the new owner\'s lock');
    expect((await other.release(short, theirs)) === 1, 'the new owner\'s release did not answer 1');

    log('--- retries until the holder releases');
    const busy = env.key('lock:busy');
    expect(await h.acquire(busy, mine, 10000), 'SET NX PX was refused');
    setTimeout(() => h.release(busy, mine).catch(() => {}), 400);
    const began = Date.now();
    let tries = 0;
    while (!(await other.acquire(busy, theirs, 1000))) {
      tries++;
      expect(Date.now() - began < 4000, 'not granted within 4 s of a release at 400 ms');
      await sleep(50);
    }
    const took = Date.now() - began;
    expect(took >= 300 && tries > 0, `granted after ${took} ms and ${tries} refusals, want after the release at 400 ms`);
    expect((await other.release(busy, theirs)) === 1, 'release after the retries did not answer 1');
  }

  // worker: one cycle takes the lock (SET NX PX), extends it (EVAL), holds
  // it and releases it (the defined script), on connections of its own.
  // A Cluster client whose command failed is closed and opened again
  // from the root nodes (which is how it learns of a new master: see
  // giveUp).
  async function worker(env, w) {
    const src = releaseScript(env);
    let h = await connect(major, env, src);
    const key = env.key('lock:failover');
    log(`worker ${w}: connected`);
    const cycle = async (h, hold) => {
      const tok = token();
      if (!(await h.acquire(key, tok, 4000))) return false;
      const ext = await h.extend(key, tok, 4000);
      if (ext !== 1) throw new Error(`extend right after the grant answered ${ext}`);
      await hold();
      const rel = await h.release(key, tok);
      if (rel !== 1) throw new Error(`release answered ${rel}: the lock was not held any more`);
      return true;
    };
    return async (hold) => {
      if (!h) {
        h = await connect(major, env, src);
        log(`worker ${w}: cluster client opened again`);
      }
      try {
        if (h.kind !== 'cluster') return await cycle(h, hold);
        let t;
        const late = new Promise((_, reject) => { t = setTimeout(() => reject(new Error('no answer within 5 s')), 5000); });
        return await Promise.race([cycle(h, hold).finally(() => clearTimeout(t)), late]);
      } catch (e) {
        if (h.kind === 'cluster') {
          h.drop();
          h = null;
        }
        throw e;
      }
    };
  }

  // refused: the user's limits, through this major's own client.
  async function refused(env) {
    const h = await connect(major, env, releaseScript(env));
    await expectRefused(env, (args) => h.raw(args[3] || env.key('x'), args));
  }

  return { modes, check, worker, refused };
}

module.exports = { suite };
