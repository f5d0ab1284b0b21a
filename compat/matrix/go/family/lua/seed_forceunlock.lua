-- Redisson forceUnlockAsync, as quoted in /work/shared/seeds/002_7d4eb1c6ba2f4711.txt (KEYS[1] lock, KEYS[2] channel, ARGV[1] message)
if (redis.call('del', KEYS[1]) == 1) then
    redis.call('publish', KEYS[2], ARGV[1]);
    return 1
else
    return 0
end
