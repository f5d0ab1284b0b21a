-- from /work/shared/seeds/004_6427f421fae164eb.txt (Redisson tryLockInnerAsync; the article's Lua block, verbatim)
-- 1. 检查锁是否存在
if (redis.call('exists', KEYS[1]) == 0) then
    -- 1.1 锁不存在，获取锁并设置过期时间
    redis.call('hset', KEYS[1], ARGV[2], 1);  -- 设置锁的持有者为当前线程，重入次数初始化为1
    redis.call('pexpire', KEYS[1], ARGV[1]);  -- 设置锁的过期时间
    return nil;  -- 返回nil表示加锁成功
end;

-- 2. 检查当前线程是否已经持有锁
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
    -- 2.1 当前线程已持有锁，重入次数+1
    redis.call('hincrby', KEYS[1], ARGV[2], 1);  -- 重入次数增加
    redis.call('pexpire', KEYS[1], ARGV[1]);     -- 更新锁的过期时间
    return nil;  -- 返回nil表示重入成功
end;

-- 3. 获取锁失败，返回锁的剩余生存时间(毫秒)
return redis.call('pttl', KEYS[1]);
