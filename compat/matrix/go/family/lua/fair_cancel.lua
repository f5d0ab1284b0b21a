-- fair lock, a waiter gives up: KEYS[1] queue, KEYS[2] timeout zset; ARGV[1] owner, ARGV[2] wait ms. Those queued behind it wait one turn less. Returns how many waiters moved up.
local queue = redis.call('lrange', KEYS[1], 0, -1);
local found = false;
local moved = 0;
for i, waiter in ipairs(queue) do
    if found then
        redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), waiter);
        moved = moved + 1;
    end;
    if waiter == ARGV[1] then
        found = true;
    end;
end;
redis.call('zrem', KEYS[2], ARGV[1]);
redis.call('lrem', KEYS[1], 0, ARGV[1]);
return moved;
