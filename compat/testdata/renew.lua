-- from /work/shared/seeds/001_44a030a3e8902194.txt (Redisson renewExpirationAsync, the watchdog; the Java string literals, one per line, without quotes and +)
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    redis.call('pexpire', KEYS[1], ARGV[1]);
    return 1;
end;
return 0;
