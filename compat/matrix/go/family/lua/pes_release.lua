-- permit-expirable semaphore, give permits back: KEYS[1] counter, KEYS[2] timeout zset, KEYS[3] channel; ARGV = the permit ids. Returns how many were held (and given back).
local removed = redis.call('zrem', KEYS[2], unpack(ARGV));
if removed == 0 then
    return 0;
end;
local value = redis.call('incrby', KEYS[1], removed);
redis.call('publish', KEYS[3], value);
return removed;
