-- count-down latch, arm: KEYS[1] count, KEYS[2] channel; ARGV[1] message (1: re-armed), ARGV[2] count. 1 = armed, 0 = already armed.
if redis.call('exists', KEYS[1]) == 0 then
    redis.call('set', KEYS[1], ARGV[2]);
    redis.call('publish', KEYS[2], ARGV[1]);
    return 1;
end;
return 0;
