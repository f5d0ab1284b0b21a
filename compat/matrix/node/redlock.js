'use strict';
// redlock (5.0.0-beta.2) over ioredis: acquire, extend, release, using —
// one client in the single, sentinel, direct and cluster modes; the Redlock
// algorithm over three independent nodes in redlock3.

const { default: Redlock, ExecutionError, ResourceLockedError } = require('redlock');
const { expect, expectReject, expectRESP3, log, sleep } = require('./common');

const modes = ['single', 'sentinel', 'direct', 'cluster', 'redlock3'];

function clientsFor(env) {
  return env.mode === 'redlock3' ? env.nodes() : [env.client()];
}

async function check(env) {
  const clients = clientsFor(env);
  for (const c of clients) {
    expect((await c.ping()) === 'PONG', 'PING');
    await expectRESP3(c);
  }
  const c = clients[0];
  const redlock = new Redlock(clients, { retryCount: 0 });
  redlock.on('error', () => {}); // lost votes are reported by the calls

  log('--- acquire, extend, contention, release');
  const key = env.key('redlock:1');
  let lock = await redlock.acquire([key], 2000);
  for (const [i, n] of clients.entries()) {
    expect((await n.get(key)) === lock.value, `node ${i + 1}: GET ${key} is not the lock's value`);
  }
  await sleep(300);
  lock = await lock.extend(3000);
  const pttl = await c.pttl(key);
  expect(pttl > 2000 && pttl <= 3000, `PTTL after extend(3000) = ${pttl}`);
  const err = await expectReject(() => redlock.acquire([key], 1000), 'acquire of a held resource', (e) => e instanceof ExecutionError);
  expect(err.attempts.length === 1, `attempts = ${err.attempts.length}, want 1 (retryCount 0)`);
  await lock.release();
  expect((await c.exists(key)) === 0, 'the key survived release');
  await expectReject(() => lock.release(), 'a second release', (e) => e instanceof ExecutionError);

  log('--- several resources in one lock (one hash tag)');
  const keys = [env.key('{redlock:multi}a'), env.key('{redlock:multi}b')];
  const multi = await redlock.acquire(keys, 2000);
  expect((await c.exists(...keys)) === 2, 'both resources are not held');
  await expectReject(() => redlock.acquire([keys[1]], 1000), 'acquire of one held resource', (e) => e instanceof ExecutionError);
  await multi.release();
  expect((await c.exists(...keys)) === 0, 'resources survived release');

  log('--- expiry');
  const short = await redlock.acquire([env.key('redlock:2')], 300);
  await sleep(600);
  const next = await redlock.acquire([env.key('redlock:2')], 1000);
  await expectReject(() => short.extend(1000), 'extend of an expired lock taken since', (e) => e instanceof ExecutionError);
  await next.release();

  log('--- retries until the holder lets go');
  const holder = await redlock.acquire([env.key('redlock:3')], 10000);
  setTimeout(() => holder.release().catch(() => {}), 400);
  const patient = new Redlock(clients, { retryCount: 40, retryDelay: 50, retryJitter: 10 });
  const began = Date.now();
  const got = await patient.acquire([env.key('redlock:3')], 1000);
  const took = Date.now() - began;
  expect(took >= 300 && took < 4000, `granted after ${took} ms, want soon after the release at 400 ms`);
  await got.release();

  log('--- using: automatic extension past the duration');
  const ukey = env.key('redlock:using');
  await redlock.using([ukey], 1000, { automaticExtensionThreshold: 400 }, async (signal) => {
    await sleep(1600);
    if (signal.aborted) throw signal.error;
    const left = await c.pttl(ukey);
    expect(left > 0, `PTTL inside using after 1.6 s of a 1 s lock = ${left}, want extended`);
  });
  expect((await c.exists(ukey)) === 0, 'using did not release');

  if (env.mode !== 'redlock3') return;
  log('--- Redlock: a minority held by someone else');
  const qkey = env.key('redlock:quorum');
  await clients[2].set(qkey, 'someone-else', 'PX', 10000);
  const q = await redlock.acquire([qkey], 2000);
  const stats = await q.attempts[0];
  expect(stats.membershipSize === 3 && stats.quorumSize === 2 && stats.votesFor.size >= 2, 'granted by 2 of 3');
  await q.release().catch(() => {}); // node 3 votes against: still released on a quorum
  expect((await clients[2].get(qkey)) === 'someone-else', "node 3's key was touched");
  expect((await clients[0].exists(qkey)) === 0, 'node 1 kept the key');
  log('--- Redlock: a majority held by someone else');
  await clients[1].set(qkey, 'someone-else', 'PX', 10000);
  await expectReject(() => redlock.acquire([qkey], 2000), 'acquire with 1 of 3 free', (e) => e instanceof ExecutionError);
  expect((await clients[0].exists(qkey)) === 0, 'node 1 kept the failed attempt');
  log('--- Redlock: one node down');
  const down = new Redlock([clients[0], clients[1], env.deadNode()], { retryCount: 0 });
  down.on('error', () => {});
  const d = await down.acquire([env.key('redlock:down')], 2000);
  await d.release().catch(() => {});
  expect((await clients[0].exists(env.key('redlock:down'))) === 0, 'release with a node down left the key');
}

async function worker(env, w) {
  const redlock = new Redlock(clientsFor(env), { retryCount: 3, retryDelay: 80, retryJitter: 20 });
  redlock.on('error', () => {});
  const key = env.key('redlock:failover');
  return async (hold) => {
    let lock;
    try {
      lock = await redlock.acquire([key], 4000);
    } catch (e) {
      if (e instanceof ExecutionError && (await isContention(e))) return false;
      throw e;
    }
    await hold();
    await lock.release();
    return true;
  };
}

// isContention: every vote against was "resource locked", not an error.
async function isContention(e) {
  if (!e.attempts.length) return false;
  for (const a of e.attempts) {
    const stats = await a;
    for (const err of stats.votesAgainst.values()) {
      if (!(err instanceof ResourceLockedError)) return false;
    }
  }
  return true;
}

module.exports = { modes, check, worker };
