<?php
// The PHP row of the compatibility matrix (docs/COMPATIBILITY.md): Debian's
// php-symfony-lock (Symfony Lock 5.4) RedisStore over Debian's php-redis
// (phpredis), unmodified, against deadbolt:
//
//     php locks.php MODE
//
// MODE is single or direct (\Redis on one address), sentinel (\RedisSentinel
// names the master, as Symfony's own Sentinel DSN does), cluster
// (\RedisCluster) or redlock3 (a CombinedStore of three RedisStores with the
// ConsensusStrategy: Symfony's Redlock). The phase and addresses come from
// the environment (COMPAT_*, set by cmd/deadbolt-compat). In the check phase
// the transcript runs and the exit code says how it went. In the failover
// phase two workers, each with its own connection, contend for one lock
// (PHP has no threads: the two are stepped in turn from one loop, and a
// grant to one while the other holds the lock is a broken mutual
// exclusion); READY, KILLING/ARMED, KILLED and the RECOVERED line are the
// same protocol as the other rows'.

require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';

use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\Lock;
use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\CombinedStore;
use Symfony\Component\Lock\Store\RedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy;

define('START', microtime(true));

class Fail extends Exception
{
}

function logf(string $fmt, ...$args): void
{
    printf("%7.3fs %s\n", microtime(true) - START, vsprintf($fmt, $args));
    fflush(STDOUT);
}

function expect(bool $cond, string $msg): void
{
    if (!$cond) {
        throw new Fail($msg);
    }
}

function split_list(?string $v): array
{
    return array_values(array_filter(array_map('trim', explode(',', (string) $v)), 'strlen'));
}

function hostport(string $addr): array
{
    $i = strrpos($addr, ':');
    return [substr($addr, 0, $i), (int) substr($addr, $i + 1)];
}

class Env
{
    public $mode;
    public $phase;
    public $addrs;
    public $direct;
    public $sentinels;
    public $master;
    public $prefix;
    public $dead;
    public $limit;
    public $user;
    public $pass;

    public function __construct(string $mode)
    {
        $this->mode = $mode;
        $this->phase = getenv('COMPAT_PHASE') ?: 'check';
        $this->addrs = split_list(getenv('COMPAT_ADDRS') ?: '');
        $this->direct = getenv('COMPAT_DIRECT') ?: ($this->addrs[0] ?? '');
        $this->sentinels = split_list(getenv('COMPAT_SENTINELS') ?: '');
        $this->master = getenv('COMPAT_MASTER') ?: 'mymaster';
        $this->prefix = getenv('COMPAT_PREFIX') ?: sprintf('compat-php-%d:', time());
        $this->dead = getenv('COMPAT_DEAD') ?: '';
        $this->limit = (float) rtrim(getenv('COMPAT_TIMEOUT') ?: '90s', 's');
        $this->user = getenv('COMPAT_USER') ?: '';
        $this->pass = getenv('COMPAT_PASS') ?: '';
    }

    public function key(string $name): string
    {
        return $this->prefix.$name;
    }

    // connect opens a \Redis on addr, logged in as the run's ACL user.
    public function connect(string $addr): \Redis
    {
        [$h, $p] = hostport($addr);
        $r = new \Redis();
        $r->connect($h, $p, 2.0, null, 0, 5.0);
        if ($this->user !== '' && !$r->auth([$this->user, $this->pass])) {
            throw new Fail("AUTH as {$this->user} on $addr: ".$r->getLastError());
        }
        return $r;
    }

    // client returns the connection an application makes for the mode.
    public function client()
    {
        switch ($this->mode) {
            case 'single':
            case 'direct':
                return $this->connect($this->direct);
            case 'sentinel':
                return $this->connect($this->discover());
            case 'cluster':
                $auth = $this->user !== '' ? [$this->user, $this->pass] : null;
                return new \RedisCluster(null, $this->addrs, 2.0, 5.0, false, $auth);
        }
        throw new Fail("no phpredis client for mode {$this->mode}");
    }

    // discover asks the Sentinels for the master, as Symfony's Sentinel
    // DSN does: phpredis 5.3's \RedisSentinel cannot log in, so these
    // connections are the default user's.
    public function discover(): string
    {
        $errs = [];
        foreach ($this->sentinels as $s) {
            [$h, $p] = hostport($s);
            try {
                $sentinel = new \RedisSentinel($h, $p, 2.0, null, 0, 2.0);
                $m = $sentinel->getMasterAddrByName($this->master);
                if (is_array($m) && count($m) === 2) {
                    return $m[0].':'.$m[1];
                }
                $errs[] = "$s: ".var_export($m, true);
            } catch (\RedisException $e) {
                $errs[] = "$s: ".$e->getMessage();
            }
        }
        throw new \RedisException('no Sentinel names the master: '.implode('; ', $errs));
    }

    // store is the Symfony store for the mode: a RedisStore, or in
    // redlock3 a CombinedStore over one RedisStore per node.
    public function store(float $ttl = 300.0)
    {
        if ($this->mode !== 'redlock3') {
            return new RedisStore($this->client(), $ttl);
        }
        $stores = [];
        foreach ($this->addrs as $a) {
            $stores[] = new RedisStore($this->connect($a), $ttl);
        }
        return new CombinedStore($stores, new ConsensusStrategy());
    }
}

// raw sends one command and returns [reply, error]: phpredis answers an
// error reply with false and keeps it for getLastError, or throws it (it
// does for NOPERM).
function raw($r, string $key, string ...$args): array
{
    $r->clearLastError();
    try {
        if ($r instanceof \RedisCluster) {
            $reply = $r->rawCommand($key, ...$args);
        } else {
            $reply = $r->rawCommand(...$args);
        }
    } catch (\RedisException $e) {
        return [false, $e->getMessage()];
    }
    return [$reply, $r->getLastError()];
}

// refused: the run's ACL user is held to its rules: FLUSHALL is refused
// with NOPERM for the command, and EVAL (which the user may run) given a
// key outside the run's prefix with NOPERM for the key.
function refused(Env $env, $r): void
{
    expect($env->user !== '', 'COMPAT_USER is not set: the matrix runs every client as a limited ACL user');
    logf('--- ACL: the user %s may not go outside its rules', $env->user);
    $outside = 'compat:outside:'.$env->user;
    foreach ([
        [['FLUSHALL'], "NOPERM this user has no permissions to run the 'flushall' command"],
        [['EVAL', 'return 1', '1', $outside], 'NOPERM this user has no permissions to access one of the keys used as arguments'],
    ] as [$args, $want]) {
        [$reply, $err] = raw($r, $env->key('any'), ...$args);
        expect($reply === false && $err === $want, sprintf('%s as %s: %s / %s, want %s', $args[0], $env->user, var_export($reply, true), var_export($err, true), $want));
        logf('%s: %s', $args[0], $err);
    }
}

function pttl($r, string $key): int
{
    return (int) $r->pttl($key);
}

// foreign holds name in r's node as Symfony would for another owner.
function foreignLock($r, string $name, float $ttl): Lock
{
    $l = (new LockFactory(new RedisStore($r, $ttl)))->createLock($name, $ttl, false);
    expect($l->acquire(), "another owner's acquire of $name on one node");
    return $l;
}

function check(Env $env): void
{
    $r = $env->mode === 'redlock3' ? $env->connect($env->addrs[0]) : $env->client();
    [$pong] = raw($r, $env->key('ping'), 'PING');
    expect($pong === 'PONG' || $pong === true, 'PING answered '.var_export($pong, true));
    refused($env, $r);
    if ($env->mode === 'redlock3') {
        checkRedlock($env);
        return;
    }

    logf('--- acquire, a second owner refused, refresh, release');
    $name = $env->key('lock:1');
    // Every store (and its connection) is made before the lock is taken:
    // a RedisCluster loads the slot map as it is made, which on a loaded
    // machine can take longer than a short lease.
    $factory = new LockFactory($env->store(10.0));
    $otherFactory = new LockFactory($env->store(10.0));
    $lock = $factory->createLock($name, 10.0, false);
    expect($lock->acquire(), 'acquire of a free lock');
    expect($lock->isAcquired(), 'isAcquired() after acquire');
    expect($r->type($name) === \Redis::REDIS_ZSET, "TYPE $name is ".var_export($r->type($name), true).', want a sorted set (Symfony 5.4 keeps its locks in one)');
    expect($r->zScore($name, '__write__') !== false, 'no __write__ member: not a write lock');
    expect(count($r->zRange($name, 0, -1)) === 2, 'members '.json_encode($r->zRange($name, 0, -1)).', want the token and __write__');
    $p = pttl($r, $name);
    expect($p > 0 && $p <= 10000, "PTTL after acquire = $p, want within 10000");
    $other = $otherFactory->createLock($name, 10.0, false);
    expect(!$other->acquire(), 'a second owner acquired a held lock');
    expect(!$other->isAcquired(), "isAcquired() of the second owner");
    $lock->refresh(30.0);
    $p = pttl($r, $name);
    expect($p > 20000 && $p <= 30000, "PTTL after refresh(30) = $p, want about 30000");
    $left = $lock->getRemainingLifetime();
    expect($left > 20.0 && $left <= 30.0, "getRemainingLifetime() = $left, want about 30");
    try {
        $other->refresh(5.0);
        throw new Fail("another owner's refresh did not throw");
    } catch (LockConflictedException $e) {
    }
    $lock->release();
    expect((int) $r->exists($name) === 0, 'the key survived release');
    expect(!$lock->isAcquired(), 'isAcquired() after release');
    expect($other->acquire(), 'the second owner after the release');
    $other->release();

    logf('--- read locks: readers share, a writer waits for them, a lone reader is promoted');
    $rname = $env->key('lock:rw');
    $wFactory = new LockFactory($env->store(10.0));
    $r1 = $factory->createLock($rname, 10.0, false);
    $r2 = $otherFactory->createLock($rname, 10.0, false);
    $w = $wFactory->createLock($rname, 10.0, false);
    expect($r1->acquireRead(), 'first reader');
    expect($r2->acquireRead(), 'second reader');
    expect($r->zScore($rname, '__write__') === false, '__write__ member while only readers hold it');
    expect(!$w->acquire(), 'a writer acquired a lock two readers hold');
    expect(!$r1->acquire(), 'a reader was promoted while another reader holds the lock');
    $r2->release();
    expect($r1->acquire(), 'the lone reader promoted to writer');
    expect(!$r2->acquireRead(), 'a reader acquired a lock a writer holds');
    $r1->release();
    expect((int) $r->exists($rname) === 0, 'the read-write key survived the last release');
    expect($w->acquire(), 'the writer once the readers left');
    $w->release();

    logf('--- expiry: the lease runs out, another owner takes it, the old owner cannot refresh');
    $sname = $env->key('lock:2');
    $short = (new LockFactory($env->store(0.3)))->createLock($sname, 0.3, false);
    expect($short->acquire(), 'acquire');
    usleep(600000);
    expect(!$short->isAcquired(), 'isAcquired() after the lease ran out');
    expect($short->isExpired(), 'isExpired() after the lease ran out');
    $next = $otherFactory->createLock($sname, 10.0, false);
    expect($next->acquire(), 'another owner after the expiry');
    try {
        $short->refresh(1.0);
        throw new Fail('refresh of an expired lock did not throw');
    } catch (LockConflictedException $e) {
    }
    $short->release(); // not its lock any more: must leave the new owner's alone
    expect($next->isAcquired(), "the old owner's release removed the new owner's lock");
    $next->release();

    logf('--- a blocking acquire waits for another process to release');
    blockingAcquire($env, $r);
}

// blockingAcquire: a child process takes the lock and releases it at
// 0.4 s; acquire(true) in this one (Symfony polls every 100 ms) is granted
// soon after.
function blockingAcquire(Env $env, $r): void
{
    $name = $env->key('lock:3');
    [$ours, $theirs] = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $pid = pcntl_fork();
    expect($pid >= 0, 'fork');
    if ($pid === 0) {
        fclose($ours);
        $code = 1;
        try {
            $holder = (new LockFactory($env->store(10.0)))->createLock($name, 10.0, false);
            if ($holder->acquire()) {
                fwrite($theirs, "held\n");
                usleep(400000);
                $holder->release();
                $code = 0;
            }
        } catch (\Throwable $e) {
            fwrite(STDERR, 'holder: '.$e->getMessage()."\n");
        }
        fwrite($theirs, "done\n");
        posix_kill(posix_getpid(), SIGKILL); // no destructors, no shared connection torn down
        exit($code);
    }
    fclose($theirs);
    expect(trim((string) fgets($ours)) === 'held', 'the other process did not take the lock');
    $began = microtime(true);
    $waiter = (new LockFactory($env->store(5.0)))->createLock($name, 5.0, false);
    expect($waiter->acquire(true), 'blocking acquire');
    $took = microtime(true) - $began;
    pcntl_waitpid($pid, $status);
    expect($took >= 0.3 && $took < 3, sprintf('granted after %.2fs, want soon after the release at 0.4 s', $took));
    logf('granted %.2fs after the other process took it', $took);
    $waiter->release();
}

// checkRedlock: a CombinedStore over three independent nodes with the
// ConsensusStrategy (a majority).
function checkRedlock(Env $env): void
{
    expect(count($env->addrs) === 3, 'redlock3 wants three addresses');
    $nodes = array_map([$env, 'connect'], $env->addrs);
    logf('--- CombinedStore over three nodes: all three held, released everywhere');
    $name = $env->key('lock:red');
    $lock = (new LockFactory($env->store(5.0)))->createLock($name, 5.0, false);
    expect($lock->acquire(), 'acquire over three nodes');
    foreach ($nodes as $i => $n) {
        expect((int) $n->exists($name) === 1, "node $i does not hold the lock");
    }
    expect(!(new LockFactory($env->store(5.0)))->createLock($name, 5.0, false)->acquire(), 'a second owner acquired');
    $lock->release();
    foreach ($nodes as $i => $n) {
        expect((int) $n->exists($name) === 0, "node $i kept the lock after release");
    }

    logf('--- a minority held by another owner: granted, theirs untouched');
    $name = $env->key('lock:minority');
    $theirs = foreignLock($nodes[0], $name, 5.0);
    $lock = (new LockFactory($env->store(5.0)))->createLock($name, 5.0, false);
    expect($lock->acquire(), 'acquire with one node of three held by another');
    expect($theirs->isAcquired(), "the other owner's hold on node 0 was touched");
    $lock->release();
    expect($theirs->isAcquired(), "release removed the other owner's hold on node 0");

    logf('--- a majority held by another owner: refused, nothing left behind');
    $name = $env->key('lock:majority');
    foreignLock($nodes[0], $name, 5.0);
    foreignLock($nodes[1], $name, 5.0);
    $lock = (new LockFactory($env->store(5.0)))->createLock($name, 5.0, false);
    expect(!$lock->acquire(), 'acquired with two nodes of three held by another');
    expect(count($nodes[2]->zRange($name, 0, -1)) === 0, 'the refused acquire left its hold on node 2');

    logf('--- one node down: granted by the other two');
    $name = $env->key('lock:down');
    $stores = [new RedisStore($nodes[0], 5.0), new RedisStore($nodes[1], 5.0), new RedisStore(new \Redis(), 5.0)];
    $lock = (new LockFactory(new CombinedStore($stores, new ConsensusStrategy())))->createLock($name, 5.0, false);
    expect($lock->acquire(), 'acquire with one node of three down');
    $lock->release();
}

function failover(Env $env): void
{
    $name = $env->key('lock:failover');
    $w = [];
    foreach ([0, 1] as $i) {
        $w[$i] = ['factory' => null, 'lock' => null, 'inside' => false, 'until' => 0.0, 'next' => 0.0, 'began' => 0.0, 'grants' => 0];
    }
    $s = ['armed' => false, 'killed_at' => null, 'after' => 0, 'errs_before' => 0, 'errs_after' => 0, 'last_err' => ''];
    stream_set_blocking(STDIN, false);
    $ready = false;
    $deadline = START + $env->limit;
    $fail = function (array &$wk, int $i, \Throwable $e) use (&$s) {
        $err = get_class($e).': '.$e->getMessage().($e->getPrevious() ? ' ('.$e->getPrevious()->getMessage().')' : '');
        $s[($s['killed_at'] !== null || $s['armed']) ? 'errs_after' : 'errs_before']++;
        $s['last_err'] = $err;
        logf('worker %d: %s', $i, $err);
        $wk['factory'] = null; // a new connection for the next cycle
        $wk['lock'] = null;
        $wk['inside'] = false;
        $wk['next'] = microtime(true) + 0.25;
    };
    while (true) {
        while (($line = fgets(STDIN)) !== false) {
            if (trim($line) === 'KILLING') {
                $s['armed'] = true;
                echo "ARMED\n";
                fflush(STDOUT);
            } elseif (trim($line) === 'KILLED' && $s['killed_at'] === null) {
                $s['killed_at'] = microtime(true);
                logf('KILLED received');
            }
        }
        if (feof(STDIN) && $s['killed_at'] === null) {
            throw new Fail('stdin closed before KILLED');
        }
        foreach ([0, 1] as $i) {
            $wk = &$w[$i];
            $now = microtime(true);
            try {
                if ($wk['inside'] && $now >= $wk['until']) {
                    $wk['lock']->release();
                    $wk['inside'] = false;
                    $wk['grants']++;
                    if ($s['killed_at'] !== null && $wk['began'] > $s['killed_at']) {
                        $s['after']++;
                    }
                    $wk['next'] = microtime(true) + 0.25;
                } elseif (!$wk['inside'] && $now >= $wk['next']) {
                    if ($wk['factory'] === null) {
                        $wk['factory'] = new LockFactory($env->store(4.0));
                    }
                    $wk['began'] = $now;
                    $wk['lock'] = $wk['factory']->createLock($name, 4.0, false);
                    if ($wk['lock']->acquire()) {
                        if ($w[1 - $i]['inside']) {
                            throw new Fail('mutual exclusion broken: both workers hold the lock');
                        }
                        $wk['inside'] = true;
                        $wk['until'] = microtime(true) + 0.02;
                    } else {
                        $wk['next'] = microtime(true) + 0.1;
                    }
                }
            } catch (Fail $e) {
                throw $e;
            } catch (\Throwable $e) {
                $fail($wk, $i, $e);
            }
            unset($wk);
        }
        if (!$ready && $w[0]['grants'] > 0 && $w[1]['grants'] > 0) {
            $ready = true;
            logf('both workers have held the lock');
            echo "READY\n";
            fflush(STDOUT);
        }
        if ($s['killed_at'] !== null && $s['after'] >= 3) {
            logf('RECOVERED: %d grants %.1fs after the kill; errors: %d before the kill, %d after (last: %s)',
                $s['after'], microtime(true) - $s['killed_at'], $s['errs_before'], $s['errs_after'], $s['last_err']);
            return;
        }
        if (microtime(true) > $deadline) {
            throw new Fail(sprintf('deadline: ready=%s grants=%d/%d after kill=%d errors before/after kill=%d/%d (last: %s)',
                $ready ? 'yes' : 'no', $w[0]['grants'], $w[1]['grants'], $s['after'], $s['errs_before'], $s['errs_after'], $s['last_err']));
        }
        usleep(5000);
    }
}

if ($argc !== 2) {
    fwrite(STDERR, "usage: locks.php MODE\n");
    exit(2);
}
$env = new Env($argv[1]);
logf('php %s, phpredis %s, symfony/lock (Debian php-symfony-lock %s), mode %s, phase %s', PHP_VERSION, phpversion('redis'),
    trim((string) shell_exec("dpkg-query -W -f '\${Version}' php-symfony-lock 2>/dev/null")), $env->mode, $env->phase);
try {
    if ($env->phase === 'check') {
        check($env);
    } else {
        failover($env);
    }
} catch (Fail $e) {
    fprintf(STDERR, "locks.php: FAIL after %.1fs: %s\n", microtime(true) - START, $e->getMessage());
    exit(1);
}
exit(0);
