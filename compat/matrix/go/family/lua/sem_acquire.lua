-- semaphore, try to take permits: KEYS[1] counter; ARGV[1] permits. 1 = taken, 0 = not enough.
local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
    redis.call('decrby', KEYS[1], ARGV[1]);
    return 1;
end;
return 0;
