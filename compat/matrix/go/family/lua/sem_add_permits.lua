-- semaphore, add permits: KEYS[1] counter, KEYS[2] channel; ARGV[1] permits. Arithmetic on the strings GET and ARGV hold; the sum is stored, published and returned.
local value = redis.call('get', KEYS[1]);
if (value == false) then
    value = 0;
end;
redis.call('set', KEYS[1], value + ARGV[1]);
redis.call('publish', KEYS[2], value + ARGV[1]);
return value + ARGV[1];
