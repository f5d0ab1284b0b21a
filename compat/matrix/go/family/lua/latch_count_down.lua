-- count-down latch, count down: KEYS[1] count, KEYS[2] channel; ARGV[1] message (0: open). At zero the latch is deleted and waiters are told; answers nothing (nil).
local left = redis.call('decr', KEYS[1]);
if left <= 0 then
    redis.call('del', KEYS[1]);
end;
if left == 0 then
    redis.call('publish', KEYS[2], ARGV[1]);
end;
