-- semaphore, set the permits once: KEYS[1] counter, KEYS[2] channel; ARGV[1] permits, ARGV[2] (optional) lifetime ms. 1 = set, 0 = already set.
if redis.call('exists', KEYS[1]) == 1 then
    return 0;
end;
if ARGV[2] ~= nil then
    redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2]);
else
    redis.call('set', KEYS[1], ARGV[1]);
end;
redis.call('publish', KEYS[2], ARGV[1]);
return 1;
