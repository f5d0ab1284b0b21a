-- read-write lock, a reader's watchdog: KEYS[1] lock hash, KEYS[2] this reader's timeout key prefix; ARGV[1] lease ms, ARGV[2] owner. Renews the lock and each of the reader's holds (the loop starts from the string HGET returned). 1 = renewed, 0 = not held.
local holds = redis.call('hget', KEYS[1], ARGV[2]);
if holds == false then
    return 0;
end;
redis.call('pexpire', KEYS[1], ARGV[1]);
for i = holds, 1, -1 do
    redis.call('pexpire', KEYS[2] .. ':' .. i, ARGV[1]);
end;
return 1;
