-- read-write lock, read lock: KEYS[1] lock hash, KEYS[2] this reader's timeout key prefix {name}:<owner>:rwlock_timeout; ARGV[1] lease ms, ARGV[2] owner, ARGV[3] owner:write. Each hold of a reader has its own timeout key <prefix>:<n>. nil = acquired, else the lock's PTTL.
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
    redis.call('hset', KEYS[1], 'mode', 'read');
    redis.call('hset', KEYS[1], ARGV[2], 1);
    redis.call('set', KEYS[2] .. ':1', 1);
    redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
    local n = redis.call('hincrby', KEYS[1], ARGV[2], 1);
    local timeoutKey = KEYS[2] .. ':' .. n;
    redis.call('set', timeoutKey, 1);
    redis.call('pexpire', timeoutKey, ARGV[1]);
    local remain = redis.call('pttl', KEYS[1]);
    redis.call('pexpire', KEYS[1], math.max(remain, ARGV[1]));
    return nil;
end;
return redis.call('pttl', KEYS[1]);
