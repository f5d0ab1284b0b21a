'use strict';
// redis-semaphore (5.8.0) over ioredis: Mutex, Semaphore, refresh and lost
// locks, contention between many holders — one client in the single,
// sentinel, direct and cluster modes; RedlockMutex and RedlockSemaphore
// over three independent nodes in redlock3.

const { Mutex, Semaphore, RedlockMutex, RedlockSemaphore, TimeoutError } = require('redis-semaphore');
const { expect, expectReject, expectRESP3, log, sleep } = require('./common');

const modes = ['single', 'sentinel', 'direct', 'cluster', 'redlock3'];

async function check(env) {
  if (env.mode === 'redlock3') return checkRedlock(env);
  const c = env.client();
  expect((await c.ping()) === 'PONG', 'PING');
  await expectRESP3(c);

  log('--- Mutex: acquire, tryAcquire of a held mutex, timeout, release');
  const name = env.key('mutex:1');
  const m = new Mutex(c, name, { lockTimeout: 2000, acquireTimeout: 1000, retryInterval: 20, refreshInterval: 0 });
  await m.acquire();
  expect(m.isAcquired, 'isAcquired after acquire');
  expect((await c.get(`mutex:${name}`)) === m.identifier, 'GET mutex:<key> is not the identifier');
  const other = new Mutex(c, name, { lockTimeout: 2000, acquireTimeout: 300, retryInterval: 20, refreshInterval: 0 });
  // tryAcquire retries until acquireTimeout (or acquireAttemptsLimit).
  expect(!(await other.tryAcquire()), 'tryAcquire of a held mutex succeeded');
  const began = Date.now();
  await expectReject(() => other.acquire(), 'acquire of a held mutex', (e) => e instanceof TimeoutError);
  const took = Date.now() - began;
  expect(took >= 250 && took < 3000, `acquire gave up after ${took} ms, want about its 300 ms timeout`);
  await m.release();
  expect((await c.exists(`mutex:${name}`)) === 0, 'the key survived release');
  expect(await other.tryAcquire(), 'tryAcquire after release');
  await other.release();

  log('--- Mutex: refresh keeps it past lockTimeout; a lost lock is reported');
  const r = new Mutex(c, env.key('mutex:2'), { lockTimeout: 600, refreshInterval: 150 });
  await r.acquire();
  await sleep(1500);
  expect(!(await new Mutex(c, env.key('mutex:2'), { refreshInterval: 0, acquireAttemptsLimit: 1 }).tryAcquire()), 'the mutex was not refreshed');
  let lost = null;
  const l = new Mutex(c, env.key('mutex:3'), { lockTimeout: 600, refreshInterval: 150, onLockLost: (e) => { lost = e; } });
  await l.acquire();
  await c.del(`mutex:${env.key('mutex:3')}`);
  for (let i = 0; i < 50 && !lost; i++) await sleep(20);
  expect(lost, 'onLockLost was not called after the key was deleted');
  await r.release();

  log('--- Semaphore: limit 2');
  const sname = env.key('sem:1');
  const s1 = new Semaphore(c, sname, 2, { lockTimeout: 5000, refreshInterval: 0 });
  const s2 = new Semaphore(c, sname, 2, { lockTimeout: 5000, refreshInterval: 0 });
  const s3 = new Semaphore(c, sname, 2, { lockTimeout: 5000, acquireTimeout: 300, retryInterval: 20, refreshInterval: 0 });
  await s1.acquire();
  await s2.acquire();
  expect((await c.zcard(`semaphore:${sname}`)) === 2, 'ZCARD semaphore:<key> is not 2');
  expect(!(await s3.tryAcquire()), 'a third holder got a semaphore of 2');
  await s1.release();
  expect(await s3.tryAcquire(), 'tryAcquire after a release');
  await s2.release();
  await s3.release();
  expect((await c.zcard(`semaphore:${sname}`)) === 0, 'holders survived release');

  log('--- contention: 6 Semaphore(2) and 4 Mutex holders at once');
  await contend(() => new Semaphore(c, env.key('sem:contend'), 2, { lockTimeout: 5000, acquireTimeout: 10000, retryInterval: 10 }), 6, 2);
  await contend(() => new Mutex(c, env.key('mutex:contend'), { lockTimeout: 5000, acquireTimeout: 10000, retryInterval: 10 }), 4, 1);
}

// contend runs n holders of locks made by mk at once, each acquiring,
// holding 50 ms and releasing three times; at most limit may hold at once.
async function contend(mk, n, limit) {
  let inside = 0;
  let most = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    for (let i = 0; i < 3; i++) {
      const lock = mk();
      await lock.acquire();
      inside++;
      most = Math.max(most, inside);
      await sleep(50);
      inside--;
      await lock.release();
    }
  }));
  expect(most >= 1 && most <= limit, `at most ${most} held at once, want at most ${limit}`);
  log(`${n} holders: at most ${most} at once (limit ${limit})`);
}

async function checkRedlock(env) {
  const nodes = env.nodes();
  for (const n of nodes) expect((await n.ping()) === 'PONG', 'PING');
  log('--- RedlockMutex over three nodes');
  const name = env.key('redlock-mutex');
  const m = new RedlockMutex(nodes, name, { lockTimeout: 2000, acquireTimeout: 500, retryInterval: 20, refreshInterval: 0 });
  await m.acquire();
  let held = 0;
  for (const n of nodes) held += await n.exists(`mutex:${name}`);
  expect(held === 3, `held on ${held} of 3 nodes`);
  const other = new RedlockMutex(nodes, name, { lockTimeout: 2000, acquireTimeout: 300, retryInterval: 20, refreshInterval: 0 });
  expect(!(await other.tryAcquire()), 'a second RedlockMutex got the lock');
  await m.release();
  expect(await other.tryAcquire(), 'tryAcquire after release');
  await other.release();

  log('--- RedlockMutex with a minority taken by someone else');
  await nodes[2].set(`mutex:${name}`, 'someone-else', 'PX', 10000);
  const q = new RedlockMutex(nodes, name, { lockTimeout: 2000, acquireTimeout: 500, retryInterval: 20, refreshInterval: 0 });
  expect(await q.tryAcquire(), 'tryAcquire with 2 of 3 nodes free');
  await q.release();
  expect((await nodes[2].get(`mutex:${name}`)) === 'someone-else', "node 3's key was touched");

  log('--- RedlockSemaphore(2) contention over three nodes');
  await contend(() => new RedlockSemaphore(nodes, env.key('redlock-sem'), 2, { lockTimeout: 5000, acquireTimeout: 10000, retryInterval: 10 }), 4, 2);
}

async function worker(env, w) {
  const c = env.client();
  const key = env.key('mutex:failover');
  return async (hold) => {
    const m = new Mutex(c, key, { lockTimeout: 4000, acquireTimeout: 300, retryInterval: 50, refreshInterval: 0 });
    try {
      await m.acquire();
    } catch (e) {
      if (e instanceof TimeoutError) return false;
      throw e;
    }
    await hold();
    await m.release();
    return true;
  };
}

module.exports = { modes, check, worker };
