-- lock unlock with an unlock latch (Redisson 3.24+): KEYS[1] lock hash, KEYS[2] channel, KEYS[3] latch key redisson_unlock_latch:{name}:<request id>; ARGV[1] message, ARGV[2] lease ms, ARGV[3] owner, ARGV[4] latch lifetime ms. A retry of the same request answers what the first one did. nil = not owner, 0 = still held, 1 = released.
local done = redis.call('get', KEYS[3]);
if done ~= false then
    return tonumber(done);
end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then
    return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if (counter > 0) then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    redis.call('set', KEYS[3], 0, 'px', ARGV[4]);
    return 0;
end;
redis.call('del', KEYS[1]);
redis.call('publish', KEYS[2], ARGV[1]);
redis.call('set', KEYS[3], 1, 'px', ARGV[4]);
return 1;
