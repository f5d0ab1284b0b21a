'use strict';
// node-redisson (1.0.4) RLock over ioredis: lock, re-entry, tryLock with
// wait and lease, the watchdog, unlock with the unlock latch and a pub/sub
// wake-up, forceUnlock — single, sentinel and direct through its
// `options` (ioredis RedisOptions), cluster through its `clusters`.

const { Redisson, TimeUnit } = require('node-redisson');
const { expect, expectReject, log, sleep } = require('./common');

const modes = ['single', 'sentinel', 'direct', 'cluster'];

function config(env, watchdogMs) {
  const o = env.options();
  const redis = o.kind === 'cluster' ? { clusters: o.nodes, options: o.options } : { options: o.options };
  return { redis, lockWatchdogTimeout: BigInt(watchdogMs || 30000) };
}

function open(env, watchdogMs) {
  const r = new Redisson(config(env, watchdogMs));
  r.redis.on('error', (e) => log(`ioredis error: ${e.message}`));
  env.clients.push(r.redis, r.commandExecutor.subscribeRedis);
  return r;
}

async function check(env) {
  const redisson = open(env);
  const c = redisson.redis;
  expect((await c.ping()) === 'PONG', 'PING');

  log('--- lock, re-entry, unlock');
  const name = env.key('rlock:1');
  const lock = redisson.getLock(name, 'thread-1');
  await lock.lock(10, TimeUnit.SECONDS);
  expect(await lock.isLocked(), 'isLocked after lock');
  const field = `${redisson.commandExecutor.id}:thread-1`;
  expect((await c.hget(name, field)) === '1', `HGET ${name} ${field} is not 1`);
  const pttl = await c.pttl(name);
  expect(pttl > 9000 && pttl <= 10000, `PTTL = ${pttl}, want the 10 s lease`);
  await lock.lock(10, TimeUnit.SECONDS);
  expect((await c.hget(name, field)) === '2', 're-entry did not count 2');
  const other = redisson.getLock(name, 'thread-2');
  expect(!(await other.tryLock(0, 10, TimeUnit.SECONDS)), 'another thread got a held lock');
  await expectReject(() => other.unlock(), 'unlock by another thread', (e) => /not locked by current/.test(e.message));
  await lock.unlock();
  expect((await c.hget(name, field)) === '1', 'one unlock did not leave 1');
  await lock.unlock();
  expect(!(await lock.isLocked()), 'still locked after two unlocks');
  // (KEYS as the default user: the run's user may not list keys.)
  const latches = await scanAll(env.inspector(), `redisson_unlock_latch:{${env.prefix}*`);
  expect(latches.length === 0, `unlock latch keys left: ${latches}`);

  log('--- tryLock with a lease; tryLock gives up after its wait');
  // node-redisson's tryLock returns false when its wait for an unlock
  // message times out, even while its wait time is not over: a waiter
  // behind a lease that simply runs out is not granted (Redis does the
  // same), so the lease is checked on its own.
  const held = redisson.getLock(env.key('rlock:2'), 'thread-1');
  expect(await held.tryLock(0, 700), 'tryLock of a free lock');
  const leased = await c.pttl(env.key('rlock:2'));
  expect(leased > 0 && leased <= 700, `PTTL = ${leased}, want the 700 ms lease`);
  await sleep(900);
  const waiter = redisson.getLock(env.key('rlock:2'), 'thread-2');
  expect(await waiter.tryLock(0, 10000), 'tryLock after the lease ran out');
  let began = Date.now();
  expect(!(await redisson.getLock(env.key('rlock:2'), 'thread-3').tryLock(400, 1000)), 'tryLock(wait 400 ms) of a held lock');
  let took = Date.now() - began;
  // node-redisson deducts the time spent so far from its wait once per
  // check, and checks more than once: it gives up somewhat early.
  expect(took >= 200 && took < 3000, `gave up after ${took} ms, want about 400 ms`);
  await waiter.unlock();

  log('--- unlock wakes a waiter through pub/sub');
  const h = redisson.getLock(env.key('rlock:3'), 'thread-1');
  await h.lock(30, TimeUnit.SECONDS);
  const second = open(env); // another process's client
  const w = second.getLock(env.key('rlock:3'), 'thread-9');
  began = Date.now();
  const granted = w.tryLock(10000, 30000);
  await sleep(500);
  await h.unlock();
  expect(await granted, 'the waiter was not granted');
  took = Date.now() - began;
  expect(took < 5000, `granted ${took} ms after the wait began, want soon after the unlock at 500 ms`);
  await w.unlock();

  log('--- the watchdog keeps a lock without a lease');
  const dogs = open(env, 1200);
  const wd = dogs.getLock(env.key('rlock:4'), 'thread-1');
  await wd.lock();
  await sleep(2500);
  expect(await wd.isLocked(), 'the watchdog did not renew the lock');
  await wd.unlock();
  expect(!(await wd.isLocked()), 'locked after unlock');

  log('--- forceUnlock');
  const f = redisson.getLock(env.key('rlock:5'), 'thread-1');
  await f.lock(30, TimeUnit.SECONDS);
  expect(await redisson.getLock(env.key('rlock:5'), 'thread-2').forceUnlock(), 'forceUnlock of a held lock');
  expect(!(await f.isLocked()), 'locked after forceUnlock');
  expect(!(await f.forceUnlock()), 'forceUnlock of no lock');
}

async function scanAll(c, pattern) {
  const nodes = typeof c.nodes === 'function' ? c.nodes('master') : [c];
  const keys = [];
  for (const n of nodes) keys.push(...(await n.keys(pattern)));
  return keys;
}

async function worker(env, w) {
  const redisson = open(env);
  const name = env.key('rlock:failover');
  let cycle = 0;
  return async (hold) => {
    // A new client id per cycle: a grant whose reply was lost in the
    // failover stays a hold of its own until its lease runs out, instead
    // of turning later grants into re-entries.
    cycle++;
    const lock = redisson.getLock(name, `worker-${w}-${cycle}`);
    if (!(await lock.tryLock(300, 4000))) return false;
    await hold();
    await lock.unlock();
    return true;
  };
}

module.exports = { modes, check, worker };
