-- fenced lock, acquire: KEYS[1] lock hash, KEYS[2] token counter; ARGV[1] lease ms, ARGV[2] owner. Every grant, re-entry included, takes a new token. {-1, token} = acquired, {pttl, -1} = held by another.
if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    local token = redis.call('incr', KEYS[2]);
    return {-1, token};
end;
return {redis.call('pttl', KEYS[1]), -1};
