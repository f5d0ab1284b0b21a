-- permit-expirable semaphore, move a live permit's deadline: KEYS[1] timeout zset; ARGV[1] permit id, ARGV[2] new deadline, ARGV[3] the client's clock in ms. 1 = moved, 0 = not held or expired.
local deadline = redis.call('zscore', KEYS[1], ARGV[1]);
if deadline ~= false and tonumber(deadline) > tonumber(ARGV[3]) then
    redis.call('zadd', KEYS[1], ARGV[2], ARGV[1]);
    return 1;
end;
return 0;
