package client

import "github.com/redis/go-redis/v9"

// The Lua scripts of the lock family. They are written for this package
// from Redisson's documented behaviour and keep Redisson's wire layout
// (keys, hash fields, channels, messages, replies), so that a Go owner and
// a Java Redisson owner contend for the same objects correctly. DESIGN.md
// in this directory lists the layout per object.
//
// Conventions shared by every script:
//   - command names are lower-case, except the publish command, which
//     comes from ARGV ("PUBLISH", or "SPUBLISH" for sharded pub/sub);
//   - every key a script touches, including those it builds, carries the
//     object's hash tag, so a script is single-slot in Redis Cluster;
//   - times are milliseconds; "now" in ARGV is the client's wall clock
//     (fair lock, permit semaphore), compared as given with stored scores;
//   - a nil reply is Lua false/nil, so "return nil" means "acquired" for
//     lock scripts and "not the owner" for unlock scripts, as in Redisson.

// Reentrant lock: hash KEYS[1], field owner → hold count.

// scriptLock takes or re-enters a lock.
// KEYS: name. ARGV: lease ms, owner.
// Reply: nil when held now; else the holder's PTTL.
var scriptLock = redis.NewScript(`
local free = redis.call('exists', KEYS[1]) == 0
if free or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
`)

// scriptUnlock releases one hold; the last one deletes the lock and
// publishes the unlock message. The latch key remembers the answer, so
// that a retried unlock (same request id) answers the same and does not
// release a second hold.
// KEYS: name, channel, latch. ARGV: message, lease ms, owner, publish
// command, latch PX.
// Reply: nil not the owner; 0 still held (re-entered); 1 released.
var scriptUnlock = redis.NewScript(`
local seen = redis.call('get', KEYS[3])
if seen ~= false then
  return tonumber(seen)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local left = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if left > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
`)

// scriptRenew extends the lease of a lock the owner holds (watchdog).
// KEYS: name. ARGV: lease ms, owner. Reply: 1 renewed, 0 not held.
var scriptRenew = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 1
end
return 0
`)

// scriptForceUnlock deletes a lock whoever holds it and wakes a waiter.
// KEYS: name, channel. ARGV: message, publish command.
// Reply: 1 deleted, 0 was not locked.
var scriptForceUnlock = redis.NewScript(`
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
`)

// Fenced lock: the reentrant lock plus a counter KEYS[2] that grows with
// every acquisition (re-entries included).

// scriptFencedLock takes or re-enters a fenced lock.
// KEYS: name, token key. ARGV: lease ms, owner.
// Reply: {-1, token} when held now; else {holder's PTTL, -1}.
var scriptFencedLock = redis.NewScript(`
local free = redis.call('exists', KEYS[1]) == 0
if free or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, redis.call('incr', KEYS[2])}
end
return {redis.call('pttl', KEYS[1]), -1}
`)

// Spin lock: the reentrant lock's layout without pub/sub.

// scriptSpinUnlock releases one hold of a spin lock; nothing is published
// (spin waiters poll).
// KEYS: name. ARGV: lease ms, owner.
// Reply: nil not the owner; 0 still held; 1 released.
var scriptSpinUnlock = redis.NewScript(`
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[2], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[1])
  return 0
end
redis.call('del', KEYS[1])
return 1
`)

// Fair lock: the lock hash KEYS[1], a FIFO list of waiting owners KEYS[2]
// and a sorted set KEYS[3] of their absolute deadlines (client clock, ms).
// A waiter whose deadline has passed is evicted from the head of the
// queue by whoever runs a fair lock script next. Unlock wakes only the
// head waiter, on the channel "<lock channel>:<owner>".

// fairEvict is the prologue that drops stale waiters from the head of the
// queue; ARGV[4] is now.
const fairEvict = `
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false then
    break
  end
  local deadline = tonumber(redis.call('zscore', KEYS[3], head))
  if deadline ~= nil and deadline > tonumber(ARGV[4]) then
    break
  end
  redis.call('zrem', KEYS[3], head)
  redis.call('lpop', KEYS[2])
end
`

// fairGrant takes the lock when it is free and the owner is first in line
// (or nobody waits), then re-enters when the owner holds it already.
const fairGrant = `
if redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false or head == ARGV[2] then
    if head ~= false then
      redis.call('lpop', KEYS[2])
    end
    redis.call('zrem', KEYS[3], ARGV[2])
    local waiting = redis.call('zrange', KEYS[3], 0, -1)
    for i = 1, #waiting do
      redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), waiting[i])
    end
    redis.call('hset', KEYS[1], ARGV[2], 1)
    redis.call('pexpire', KEYS[1], ARGV[1])
    return nil
  end
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
`

// scriptFairTryLock makes one attempt without joining the queue.
// KEYS: name, queue, timeouts. ARGV: lease ms, owner, wait timeout ms, now.
// Reply: nil when held now; else 1.
var scriptFairTryLock = redis.NewScript(fairEvict + fairGrant + `
return 1
`)

// scriptFairLock makes an attempt and, failing, joins the queue (or stays
// in it). A new waiter's deadline is the deadline of the waiter before it
// (or the lock's expiry) plus the wait timeout.
// KEYS: name, queue, timeouts. ARGV: lease ms, owner, wait timeout ms, now.
// Reply: nil when held now; else an estimate in ms of when to look again.
var scriptFairLock = redis.NewScript(fairEvict + fairGrant + `
local mine = redis.call('zscore', KEYS[3], ARGV[2])
if mine ~= false then
  return tonumber(mine) - tonumber(ARGV[3]) - tonumber(ARGV[4])
end
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
  ttl = redis.call('pttl', KEYS[1])
end
if redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
`)

// scriptFairUnlock releases one hold of a fair lock; the last one deletes
// it and wakes the head waiter on its own channel.
// KEYS: name, queue, timeouts, channel, latch. ARGV: message, lease ms,
// owner, now, publish command, latch PX.
// Reply: nil not the owner; 0 still held; 1 released.
var scriptFairUnlock = redis.NewScript(`
local seen = redis.call('get', KEYS[5])
if seen ~= false then
  return tonumber(seen)
end
` + fairEvict + `
local function wake()
  local head = redis.call('lindex', KEYS[2], 0)
  if head ~= false then
    redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
  end
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  if redis.call('exists', KEYS[1]) == 0 then
    wake()
  end
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[5], 0, 'px', ARGV[6])
  return 0
end
redis.call('del', KEYS[1])
wake()
redis.call('set', KEYS[5], 1, 'px', ARGV[6])
return 1
`)

// scriptFairForceUnlock deletes a fair lock and wakes the head waiter.
// KEYS: name, queue, timeouts, channel. ARGV: message, unused, unused,
// now, publish command. Reply: 1 deleted, 0 was not locked.
var scriptFairForceUnlock = redis.NewScript(fairEvict + `
if redis.call('del', KEYS[1]) == 1 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head ~= false then
    redis.call(ARGV[5], KEYS[4] .. ':' .. head, ARGV[1])
  end
  return 1
end
return 0
`)

// scriptFairCancel takes a waiter that gives up out of the queue; when it
// was first, the deadlines behind it move up by one wait timeout, and when
// the lock is free the new head is woken, as it would have been by an
// unlock.
// KEYS: name, queue, timeouts, channel. ARGV: owner, wait timeout ms,
// message, publish command. Reply: nil.
var scriptFairCancel = redis.NewScript(`
if redis.call('lindex', KEYS[2], 0) == ARGV[1] then
  local waiting = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #waiting do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[2]), waiting[i])
  end
end
redis.call('zrem', KEYS[3], ARGV[1])
redis.call('lrem', KEYS[2], 0, ARGV[1])
if redis.call('exists', KEYS[1]) == 0 then
  local head = redis.call('lindex', KEYS[2], 0)
  if head ~= false then
    redis.call(ARGV[4], KEYS[4] .. ':' .. head, ARGV[3])
  end
end
return nil
`)

// Read-write lock: hash KEYS[1] with field "mode" = "read" | "write";
// readers hold fields "<owner>" → count, each hold also has a string key
// "<prefix>:<owner>:rwlock_timeout:<n>" with its own lease, so that the
// hash lives as long as its longest-lived reader; the writer holds field
// "<owner>:write" → count.

// scriptReadLock takes or re-enters a read lock; an owner that holds the
// write lock may also read.
// KEYS: name, this owner's timeout prefix. ARGV: lease ms, owner, owner
// write field. Reply: nil when held now; else the lock's PTTL.
var scriptReadLock = redis.NewScript(`
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1)
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local hold = KEYS[2] .. ':' .. n
  redis.call('set', hold, 1)
  redis.call('pexpire', hold, ARGV[1])
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], math.max(left, ARGV[1]))
  return nil
end
return redis.call('pttl', KEYS[1])
`)

// scriptReadUnlock releases one read hold. While other holds remain, the
// hash lives as long as the longest of their timeout keys; when none
// remains, it is deleted and waiters are told (message 0).
// KEYS: name, channel, this owner's timeout prefix, key prefix, latch.
// ARGV: message, owner, publish command, latch PX.
// Reply: nil not a reader; 0 still held by someone; 1 released.
var scriptReadUnlock = redis.NewScript(`
local seen = redis.call('get', KEYS[5])
if seen ~= false then
  return tonumber(seen)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
  return nil
end
local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if n == 0 then
  redis.call('hdel', KEYS[1], ARGV[2])
end
redis.call('del', KEYS[3] .. ':' .. (n + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  local longest = -3
  local fields = redis.call('hkeys', KEYS[1])
  for _, field in ipairs(fields) do
    local count = tonumber(redis.call('hget', KEYS[1], field))
    if type(count) == 'number' then
      for i = count, 1, -1 do
        local left = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i)
        longest = math.max(left, longest)
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    redis.call('set', KEYS[5], 0, 'px', ARGV[4])
    return 0
  end
  if mode == 'write' then
    redis.call('set', KEYS[5], 0, 'px', ARGV[4])
    return 0
  end
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
`)

// scriptReadRenew extends a reader's lease: the hash and the timeout keys
// of every read hold in it.
// KEYS: name, key prefix. ARGV: lease ms, owner. Reply: 1 renewed, 0 not
// a reader.
var scriptReadRenew = redis.NewScript(`
if redis.call('hget', KEYS[1], ARGV[2]) == false then
  return 0
end
redis.call('pexpire', KEYS[1], ARGV[1])
if redis.call('hlen', KEYS[1]) > 1 then
  local fields = redis.call('hkeys', KEYS[1])
  for _, field in ipairs(fields) do
    local count = tonumber(redis.call('hget', KEYS[1], field))
    if type(count) == 'number' then
      for i = count, 1, -1 do
        redis.call('pexpire', KEYS[2] .. ':' .. field .. ':rwlock_timeout:' .. i, ARGV[1])
      end
    end
  end
end
return 1
`)

// scriptWriteLock takes or re-enters the write lock.
// KEYS: name. ARGV: lease ms, owner write field.
// Reply: nil when held now; else the lock's PTTL.
var scriptWriteLock = redis.NewScript(`
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  local left = redis.call('pttl', KEYS[1])
  redis.call('pexpire', KEYS[1], left + ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
`)

// scriptWriteUnlock releases one write hold; the last one deletes the
// lock (or hands it to the owner's own read holds) and wakes everyone
// (message 1).
// KEYS: name, channel, latch. ARGV: message, lease ms, owner write field,
// publish command, latch PX.
// Reply: nil not the writer; 0 still held; 1 released.
var scriptWriteUnlock = redis.NewScript(`
local seen = redis.call('get', KEYS[3])
if seen ~= false then
  return tonumber(seen)
end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  return nil
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
if redis.call('hincrby', KEYS[1], ARGV[3], -1) > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], ARGV[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
`)

// scriptRWForceUnlock deletes a read-write lock when it is in the given
// mode and wakes waiters.
// KEYS: name, channel. ARGV: message, publish command, mode.
// Reply: 1 deleted, 0 not locked in that mode.
var scriptRWForceUnlock = redis.NewScript(`
if redis.call('hget', KEYS[1], 'mode') == ARGV[3] then
  redis.call('del', KEYS[1])
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
`)

// Semaphore: a string counter of available permits; every change that
// adds permits publishes the new count.

// scriptSemAcquire takes permits when enough are available.
// KEYS: name. ARGV: permits. Reply: 1 taken, 0 not enough.
var scriptSemAcquire = redis.NewScript(`
local have = redis.call('get', KEYS[1])
if have ~= false and tonumber(have) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return 1
end
return 0
`)

// scriptSemRelease adds permits (negative: removes them) and publishes
// the new count. KEYS: name, channel. ARGV: permits, publish command.
// Reply: the new count.
var scriptSemRelease = redis.NewScript(`
local now = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], now)
return now
`)

// scriptSemTrySetPermits sets the count only when the semaphore does not
// exist yet. KEYS: name, channel. ARGV: permits, publish command, lease ms
// (0: none). Reply: 1 set, 0 already set.
var scriptSemTrySetPermits = redis.NewScript(`
if redis.call('get', KEYS[1]) ~= false then
  return 0
end
if tonumber(ARGV[3]) > 0 then
  redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[3])
else
  redis.call('set', KEYS[1], ARGV[1])
end
redis.call(ARGV[2], KEYS[2], ARGV[1])
return 1
`)

// scriptSemDrain takes every available permit.
// KEYS: name. Reply: how many were taken.
var scriptSemDrain = redis.NewScript(`
local have = redis.call('get', KEYS[1])
if have == false then
  return 0
end
redis.call('set', KEYS[1], 0)
return have
`)

// Permit-expirable semaphore: the counter KEYS[1] plus a sorted set
// KEYS[2] of acquired permit ids (16 raw bytes) scored by their absolute
// deadline (client clock, ms; 922337203685477 for "never"). Expired
// permits go back to the counter whenever a script looks.

// pesReap returns up to ARGV[limit] expired permits to the counter;
// needs now in ARGV[nowArg] and the publish command in ARGV[pubArg].
func pesReap(nowArg, limitArg, pubArg string) string {
	return `
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[` + nowArg + `], 'limit', 0, ` + limitArg + `)
if #expired > 0 then
  redis.call('zrem', KEYS[2], unpack(expired))
  local back = redis.call('incrby', KEYS[1], #expired)
  if back > 0 then
    redis.call(ARGV[` + pubArg + `], KEYS[3], back)
  end
end
`
}

// scriptPESAcquire takes permits with the given ids and deadline.
// KEYS: name, timeouts, channel. ARGV: permits, deadline, now, "never"
// score, publish command, ids...
// Reply: "OK" taken; ":<score>" the earliest deadline of a held permit
// (look again then); nil nothing to expect but a release.
var scriptPESAcquire = redis.NewScript(pesReap("3", "ARGV[1]", "5") + `
local have = redis.call('get', KEYS[1])
if have ~= false and tonumber(have) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  for i = 6, #ARGV do
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[i])
  end
  return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] ~= nil and first[2] ~= ARGV[4] then
  return ':' .. first[2]
end
return nil
`)

// scriptPESRelease gives permits back.
// KEYS: name, timeouts, channel. ARGV: now, publish command, ids...
// Reply: how many of the ids were held and not yet expired.
var scriptPESRelease = redis.NewScript(`
local released = 0
local returned = 0
for i = 3, #ARGV do
  local deadline = redis.call('zscore', KEYS[2], ARGV[i])
  if deadline ~= false and redis.call('zrem', KEYS[2], ARGV[i]) == 1 then
    returned = returned + 1
    if tonumber(deadline) > tonumber(ARGV[1]) then
      released = released + 1
    end
  end
end
if returned > 0 then
  local now = redis.call('incrby', KEYS[1], returned)
  redis.call(ARGV[2], KEYS[3], now)
end
return released
`)

// scriptPESAvailable returns expired permits, then counts what is free.
// KEYS: name, timeouts, channel. ARGV: now, publish command.
// Reply: available permits.
var scriptPESAvailable = redis.NewScript(pesReap("1", "-1", "2") + `
local have = redis.call('get', KEYS[1])
if have == false then
  return 0
end
return tonumber(have)
`)

// scriptPESUpdateLease moves a held permit's deadline.
// KEYS: name, timeouts, channel. ARGV: now, publish command, id, deadline.
// Reply: 1 moved, 0 not held (or expired).
var scriptPESUpdateLease = redis.NewScript(pesReap("1", "-1", "2") + `
if redis.call('zscore', KEYS[2], ARGV[3]) == false then
  return 0
end
redis.call('zadd', KEYS[2], ARGV[4], ARGV[3])
return 1
`)

// Count-down latch: a string counter; reaching zero deletes it and
// publishes 0, setting a new count publishes 1.

// scriptLatchTrySetCount arms a latch that is not armed.
// KEYS: name, channel. ARGV: message (1), count, publish command.
// Reply: 1 armed, 0 already armed.
var scriptLatchTrySetCount = redis.NewScript(`
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('set', KEYS[1], ARGV[2])
redis.call(ARGV[3], KEYS[2], ARGV[1])
return 1
`)

// scriptLatchCountDown counts down once; at zero the latch opens.
// KEYS: name, channel. ARGV: message (0), publish command. Reply: nil.
var scriptLatchCountDown = redis.NewScript(`
local left = redis.call('decr', KEYS[1])
if left <= 0 then
  redis.call('del', KEYS[1])
end
if left == 0 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
end
return nil
`)

// scriptLatchDelete deletes a latch, opening it for every waiter.
// KEYS: name, channel. ARGV: message (0), publish command.
// Reply: 1 deleted, 0 did not exist.
var scriptLatchDelete = redis.NewScript(`
if redis.call('del', KEYS[1]) == 1 then
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
`)
