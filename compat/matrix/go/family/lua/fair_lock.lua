-- fair lock, acquire or queue: KEYS[1] lock hash, KEYS[2] queue list, KEYS[3] timeout zset (absolute ms deadlines); ARGV[1] lease ms, ARGV[2] owner, ARGV[3] wait ms, ARGV[4] the client's clock in ms. nil = acquired, else ms until our turn at most.
-- waiters at the head of the queue whose deadline has passed have given up
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

-- free, and nobody is ahead of us: take it; everyone still waiting waits one turn less
if (redis.call('exists', KEYS[1]) == 0)
    and ((redis.call('exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
    redis.call('lpop', KEYS[2]);
    redis.call('zrem', KEYS[3], ARGV[2]);
    local waiting = redis.call('zrange', KEYS[3], 0, -1);
    for i = 1, #waiting, 1 do
        redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), waiting[i]);
    end;
    redis.call('hset', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;

-- ours already: enter again
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('hincrby', KEYS[1], ARGV[2], 1);
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return nil;
end;

-- queued already: our deadline, less the wait we were granted, from now
local mine = redis.call('zscore', KEYS[3], ARGV[2]);
if mine ~= false then
    return mine - tonumber(ARGV[3]) - tonumber(ARGV[4]);
end;

-- join the queue after the last waiter, or after the holder
local last = redis.call('lindex', KEYS[2], -1);
local ttl;
if last ~= false and last ~= ARGV[2] then
    ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4]);
else
    ttl = redis.call('pttl', KEYS[1]);
end;
local deadline = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);
if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then
    redis.call('rpush', KEYS[2], ARGV[2]);
end;
return ttl;
