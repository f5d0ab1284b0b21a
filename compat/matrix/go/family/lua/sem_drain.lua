-- semaphore, take every permit: KEYS[1] counter. Returns how many there were.
local value = redis.call('get', KEYS[1]);
if (value == false) then
    return 0;
end;
redis.call('set', KEYS[1], 0);
return tonumber(value);
