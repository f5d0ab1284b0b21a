-- permit-expirable semaphore, set the permits once: KEYS[1] counter, KEYS[2] channel; ARGV[1] permits. OK (SET's status) = set, nil = already set.
if redis.call('exists', KEYS[1]) == 1 then
    return nil;
end;
local ok = redis.call('set', KEYS[1], ARGV[1]);
redis.call('publish', KEYS[2], ARGV[1]);
return ok;
