-- from /work/shared/seeds/002_7d4eb1c6ba2f4711.txt (Redisson forceUnlockAsync; the Java string literals, one per line, without quotes and +)
if (redis.call('del', KEYS[1]) == 1) then
    redis.call('publish', KEYS[2], ARGV[1]);
    return 1
else
    return 0
end
