-- permit-expirable semaphore, a permit's lease deadline: KEYS[1] timeout zset; ARGV[1] permit id. The score as ZSCORE prints it, or nil.
return redis.call('zscore', KEYS[1], ARGV[1]);
