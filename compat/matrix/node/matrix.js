'use strict';
// The Node column of deadbolt's compatibility matrix (docs/COMPATIBILITY.md):
//
//   node matrix.js SUITE MODE
//
// SUITE is redlock, semaphore, redisson (over ioredis), noderedis4 or
// noderedis5 (node-redis 4.x and 5.x); MODE is single, sentinel, direct,
// cluster or redlock3. Addresses and the phase come from the
// environment (COMPAT_*, set by cmd/deadbolt-compat). In the check phase
// the suite's transcript runs; in the failover phase two workers contend
// for one lock around the runner's leader kill (common.js, failover).

const fs = require('fs');
const path = require('path');
const { Env, Fail, expectRefused, failover, log } = require('./common');

const suites = {
  redlock: require('./redlock'),
  semaphore: require('./semaphore'),
  redisson: require('./redisson'),
  noderedis4: require('./noderedis').suite(4),
  noderedis5: require('./noderedis').suite(5),
};

// installedVersion reads node_modules/<pkg>/package.json (some packages'
// exports do not let require reach it).
function installedVersion(pkg) {
  const file = path.join(__dirname, 'node_modules', pkg, 'package.json');
  return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

async function main(argv) {
  if (argv.length !== 2) {
    process.stderr.write('usage: node matrix.js SUITE MODE\n');
    return 2;
  }
  const [name, mode] = argv;
  const suite = suites[name];
  if (!suite) throw new Fail(`unknown suite ${name}`);
  if (!suite.modes.includes(mode)) throw new Fail(`suite ${name} does not run in mode ${mode}`);
  const env = new Env(mode);
  const versions = ['ioredis', 'redlock', 'redis-semaphore', 'node-redisson', 'redis4', 'redis5'].map((p) => `${p} ${installedVersion(p)}`);
  log(`node ${process.version}, ${versions.join(', ')}; suite ${name}, mode ${mode}, phase ${env.phase}`);
  const timer = setTimeout(() => {
    process.stderr.write(`matrix.js: FAIL: no result after ${env.limitMs} ms\n`);
    process.exit(1);
  }, env.limitMs + 5000);
  try {
    if (env.phase === 'check') {
      // The suites over ioredis check the user's limits with an ioredis
      // client; node-redis's suites with their own (suite.refused).
      if (suite.refused) await suite.refused(env);
      else {
        const c = mode === 'redlock3' ? env.nodes()[0] : env.client();
        await expectRefused(env, (args) => c.call(...args));
      }
      await suite.check(env);
    }
    else await failover(env, (w) => suite.worker(env, w));
  } finally {
    clearTimeout(timer);
    await env.close();
  }
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    const msg = e instanceof Fail ? e.message : (e && e.stack) || String(e);
    process.stderr.write(`matrix.js: FAIL after ${process.uptime().toFixed(1)}s: ${msg}\n`);
    process.exit(1);
  },
);
