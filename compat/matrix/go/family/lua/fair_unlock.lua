-- fair lock, unlock: KEYS[1] lock hash, KEYS[2] queue, KEYS[3] timeout zset, KEYS[4] channel prefix; ARGV[1] message, ARGV[2] lease ms, ARGV[3] owner, ARGV[4] the client's clock in ms. Wakes only the first waiter, on its own channel <prefix>:<owner>. nil = not owner, 0 = still held, 1 = released.
while true do
    local head = redis.call('lindex', KEYS[2], 0);
    if head == false then
        break;
    end;
    local deadline = tonumber(redis.call('zscore', KEYS[3], head));
    if deadline > tonumber(ARGV[4]) then
        break;
    end;
    redis.call('zrem', KEYS[3], head);
    redis.call('lpop', KEYS[2]);
end;

if redis.call('exists', KEYS[1]) == 0 then
    local nextWaiter = redis.call('lindex', KEYS[2], 0);
    if nextWaiter ~= false then
        redis.call('publish', KEYS[4] .. ':' .. nextWaiter, ARGV[1]);
    end;
    return 1;
end;
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
    return nil;
end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
if counter > 0 then
    redis.call('pexpire', KEYS[1], ARGV[2]);
    return 0;
end;
redis.call('del', KEYS[1]);
local nextWaiter = redis.call('lindex', KEYS[2], 0);
if nextWaiter ~= false then
    redis.call('publish', KEYS[4] .. ':' .. nextWaiter, ARGV[1]);
end;
return 1;
