-- read-write lock, write unlock: KEYS[1] lock hash, KEYS[2] channel; ARGV[1] message (1: wakes every waiter), ARGV[2] lease ms, ARGV[3] owner:write. When the writer still holds read locks the lock goes back to read mode. nil = not owner, 0 = still held, 1 = released.
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
    redis.call('publish', KEYS[2], ARGV[1]);
    return 1;
end;
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if counter > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    return 0;
end;
redis.call('hdel', KEYS[1], ARGV[3]);
if redis.call('hlen', KEYS[1]) == 1 then
    redis.call('del', KEYS[1]);
    redis.call('publish', KEYS[2], ARGV[1]);
else
    redis.call('hset', KEYS[1], 'mode', 'read');
end;
return 1;
