<?php
// Symfony Lock's RedisStore over phpredis over TLS, against a TLS-only
// deadbolt cluster (tls_clients_test.go runs it): acquire, a second owner
// refused, release, with a client certificate. Arguments: the CA, the
// client certificate and key, the leader, a follower. Modes: the leader,
// a follower and RedisCluster. phpredis 5.3's RedisSentinel has no TLS
// (nor credentials): no Sentinel mode.
require_once '/usr/share/php/Symfony/Component/Lock/autoload.php';

use Symfony\Component\Lock\LockFactory;
use Symfony\Component\Lock\Store\RedisStore;

[, $ca, $cert, $key, $leader, $follower] = $argv;
// The certificates name 127.0.0.1 by IP, as Redis's do.
$stream = ['cafile' => $ca, 'local_cert' => $cert, 'local_pk' => $key, 'verify_peer_name' => false];

function connectTLS(string $addr, array $stream): \Redis
{
    [$h, $p] = explode(':', $addr);
    $r = new \Redis();
    if (!$r->connect('tls://'.$h, (int) $p, 2.0, null, 0, 5.0, ['stream' => $stream])) {
        throw new RuntimeException("connect $addr: ".$r->getLastError());
    }
    return $r;
}

function lock($redis, string $name): void
{
    $a = (new LockFactory(new RedisStore($redis, 10.0)))->createLock($name, 10.0, false);
    $b = (new LockFactory(new RedisStore($redis, 10.0)))->createLock($name, 10.0, false);
    if (!$a->acquire()) {
        throw new RuntimeException("$name: acquire refused");
    }
    if ($b->acquire()) {
        throw new RuntimeException("$name: a second owner acquired it");
    }
    $a->release();
    if (!$b->acquire()) {
        throw new RuntimeException("$name: not free after release");
    }
    $b->release();
}

$modes = [
    'leader' => fn () => connectTLS($leader, $stream),
    'follower' => fn () => connectTLS($follower, $stream),
    // RedisCluster takes the stream context's options themselves.
    'cluster' => fn () => new \RedisCluster(null, ['tls://'.$follower], 2.0, 5.0, false, null, $stream),
];
foreach ($modes as $mode => $open) {
    lock($open(), "tls:php:$mode");
    echo "$mode ok\n";
}
