-- semaphore, give permits back: KEYS[1] counter, KEYS[2] channel; ARGV[1] permits. Publishes the new count; answers nothing (nil).
local value = redis.call('incrby', KEYS[1], ARGV[1]);
redis.call('publish', KEYS[2], value);
