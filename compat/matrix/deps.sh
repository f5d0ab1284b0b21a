#!/usr/bin/env bash
# Installs the compatibility matrix's clients when they are missing, and
# says so (make compat-deps; docs/COMPATIBILITY.md):
#   - Debian packages: python3-redis (redis-py), redis-tools (redis-cli),
#     redis-server (the reference column), nodejs and npm if there is no node,
#     php-cli with php-redis (phpredis) and php-symfony-lock (Symfony Lock),
#     ruby-redis (the redis gem 4.8; it brings ruby);
#   - the pinned npm packages of compat/matrix/node (npm ci, from
#     package-lock.json) when node_modules is absent or older than the lock.
# The Go clients are modules of go.mod (the pinned redislock row: of
# compat/matrix/gopinned/go.mod): go build fetches them.
# With CI=true a failed install fails; otherwise it is reported and the
# matrix skips the clients it could not install.
set -euo pipefail
cd "$(dirname "$0")"

failed() {
	echo "compat-deps: $*" >&2
	if [ "${CI:-}" = true ]; then
		exit 1
	fi
	echo "compat-deps: going on; make compat will skip what is missing (CI=true makes it a failure)" >&2
}

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
need=()
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need+=(python3-redis)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v node >/dev/null 2>&1 || need+=(nodejs)
command -v npm >/dev/null 2>&1 || need+=(npm)
command -v php >/dev/null 2>&1 || need+=(php-cli)
{ command -v php >/dev/null 2>&1 && php -r 'exit(class_exists("Redis") ? 0 : 1);' >/dev/null 2>&1; } || need+=(php-redis)
[ -f /usr/share/php/Symfony/Component/Lock/Store/RedisStore.php ] || need+=(php-symfony-lock)
{ command -v ruby >/dev/null 2>&1 && ruby -e 'require "redis"' >/dev/null 2>&1; } || need+=(ruby-redis)
if ((${#need[@]})); then
	echo "compat-deps: installing ${need[*]} (Debian packages)"
	if $sudo apt-get update -qq &&
		DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; then
		# The package starts a system-wide server on 6379; the matrix starts its own.
		if [[ " ${need[*]} " == *" redis-server "* ]]; then
			$sudo systemctl disable --now redis-server >/dev/null 2>&1 || $sudo service redis-server stop >/dev/null 2>&1 || true
		fi
	else
		failed "apt-get install ${need[*]} failed"
	fi
fi

if command -v npm >/dev/null 2>&1; then
	if [ ! -f node/node_modules/.package-lock.json ] || [ node/package-lock.json -nt node/node_modules/.package-lock.json ]; then
		echo "compat-deps: installing the pinned npm packages of compat/matrix/node (npm ci)"
		(cd node && npm ci --no-audit --no-fund --loglevel=error) || failed "npm ci failed"
	fi
else
	failed "no npm"
fi

say() { "$@" 2>/dev/null || echo "missing"; }
echo "compat-deps: python3-redis $(say /usr/bin/python3 -c 'import redis; print(redis.__version__)')," \
	"redis-cli $(say redis-cli --version | cut -d' ' -f2), node $(say node --version)," \
	"php $(say php -r 'echo PHP_VERSION;'), phpredis $(say php -r 'echo phpversion("redis") ?: exit(1);')," \
	"php-symfony-lock $(say dpkg-query -W -f '${Version}' php-symfony-lock)," \
	"ruby $(say ruby -e 'print RUBY_VERSION'), redis gem $(say ruby -e 'require "redis"; print Redis::VERSION')," \
	"$(cd node && say node -p '["ioredis","redlock","redis-semaphore","node-redisson","redis4","redis5"].map(p => p + " " + JSON.parse(require("fs").readFileSync("node_modules/" + p + "/package.json")).version).join(", ")')"
