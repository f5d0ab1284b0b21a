// ioredis over TLS in each mode it has, against a TLS-only deadbolt
// cluster (tls_clients_test.go runs it): a SET NX PX lock and its Lua
// release. Arguments: the matrix's node_modules, the CA, the client
// certificate and key, the leader, a follower, a TLS sentinel address.
'use strict';
const [modules, caFile, certFile, keyFile, leader, follower, sentinel] = process.argv.slice(2);
const Redis = require(modules + '/ioredis');
const fs = require('fs');

const tls = {
  ca: fs.readFileSync(caFile), cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile),
  checkServerIdentity: () => undefined, // the certificates name 127.0.0.1 by IP, as Redis's do
};
const hp = (a) => { const i = a.lastIndexOf(':'); return { host: a.slice(0, i), port: Number(a.slice(i + 1)) }; };
const release = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

async function lock(r, name) {
  const ok = await r.set(name, 'tok-' + name, 'PX', 10000, 'NX');
  if (ok !== 'OK') throw new Error(name + ': SET NX answered ' + ok);
  const n = await r.eval(release, 1, name, 'tok-' + name);
  if (n !== 1) throw new Error(name + ': release answered ' + n);
}

const modes = {
  leader: () => new Redis({ ...hp(leader), tls }),
  follower: () => new Redis({ ...hp(follower), tls }),
  sentinel: () => new Redis({ sentinels: [hp(sentinel)], name: 'mymaster', tls, enableTLSForSentinelMode: true, sentinelTLS: tls }),
  cluster: () => new Redis.Cluster([hp(follower)], { redisOptions: { tls } }),
};

(async () => {
  for (const [mode, make] of Object.entries(modes)) {
    const r = make();
    try {
      await lock(r, '{tls:ioredis}:' + mode);
      console.log(mode + ' ok');
    } finally {
      r.disconnect();
    }
  }
})().catch((e) => { console.error(e.stack || String(e)); process.exit(1); });
