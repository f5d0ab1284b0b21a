-- permit-expirable semaphore, free and held permits: KEYS[1] counter, KEYS[2] timeout zset; ARGV[1] the client's clock in ms. Expired leases are given back first. Returns {free, held}.
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1]);
if #expired > 0 then
    redis.call('zrem', KEYS[2], unpack(expired));
    redis.call('incrby', KEYS[1], #expired);
end;
local free = tonumber(redis.call('get', KEYS[1]) or '0');
local held = redis.call('zcount', KEYS[2], '-inf', '+inf');
return {free, held};
