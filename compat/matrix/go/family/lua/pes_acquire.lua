-- permit-expirable semaphore, take one permit: KEYS[1] counter, KEYS[2] timeout zset (permit id -> lease deadline ms, 922337203685477 for none), KEYS[3] channel; ARGV[1] permits (1), ARGV[2] deadline, ARGV[3] permit id (16 raw bytes), ARGV[4] the client's clock in ms. Returns the id; or, when none is free, ms until the nearest lease ends, or nil if no lease ends.
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[4], 'limit', 0, 100);
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired));
    local value = redis.call('incrby', KEYS[1], #expired);
    redis.call('publish', KEYS[3], value);
end;
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
    redis.call('decrby', KEYS[1], ARGV[1]);
    redis.call('zadd', KEYS[2], ARGV[2], ARGV[3]);
    return ARGV[3];
end;
local nearest = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES');
if nearest[1] ~= nil and nearest[2] ~= '922337203685477' then
    return tonumber(nearest[2]) - tonumber(ARGV[4]);
end;
return nil;
