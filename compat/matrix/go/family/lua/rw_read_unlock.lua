-- read-write lock, read unlock: KEYS[1] lock hash, KEYS[2] channel, KEYS[3] this reader's timeout key prefix, KEYS[4] the {name} prefix of every reader's timeout keys; ARGV[1] message, ARGV[2] owner. The lock lives as long as its longest-lived remaining hold. nil = not owner, 0 = still held, 1 = released.
local mode = redis.call('hget', KEYS[1], 'mode');
if mode == false then
    redis.call('publish', KEYS[2], ARGV[1]);
    return 1;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then
    return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[2], -1);
if counter == 0 then
    redis.call('hdel', KEYS[1], ARGV[2]);
end;
redis.call('del', KEYS[3] .. ':' .. (counter + 1));

if redis.call('hlen', KEYS[1]) > 1 then
    local maxRemain = -3;
    local fields = redis.call('hkeys', KEYS[1]);
    for n, field in ipairs(fields) do
        local holds = redis.call('hget', KEYS[1], field);
        if tonumber(holds) ~= nil then
            for i = holds, 1, -1 do
                local remain = redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i);
                maxRemain = math.max(remain, maxRemain);
            end;
        end;
    end;
    if maxRemain > 0 then
        redis.call('pexpire', KEYS[1], maxRemain);
        return 0;
    end;
    if mode == 'write' then
        return 0;
    end;
end;
redis.call('del', KEYS[1]);
redis.call('publish', KEYS[2], ARGV[1]);
return 1;
