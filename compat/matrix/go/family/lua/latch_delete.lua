-- count-down latch, delete: KEYS[1] count, KEYS[2] channel; ARGV[1] message (0: open). 1 = deleted, 0 = there was none.
if redis.call('del', KEYS[1]) == 1 then
    redis.call('publish', KEYS[2], ARGV[1]);
    return 1;
end;
return 0;
