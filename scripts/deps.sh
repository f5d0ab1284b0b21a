#!/usr/bin/env bash
# Installs what the tests need when it is missing, and says so.
set -euo pipefail

need=()
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || need+=(redis-tools)
command -v ip >/dev/null 2>&1 || need+=(iproute2) # make chaos: network namespaces
command -v openssl >/dev/null 2>&1 || need+=(openssl) # TLS tests: certificates
command -v chromium >/dev/null 2>&1 || need+=(chromium) # the status page's browser test (TestStatusPageBrowser)
/usr/bin/python3 -c 'import redis' >/dev/null 2>&1 || need+=(python3-redis) # redis-py in the lock tests

if ((${#need[@]})); then
	echo "deps: installing ${need[*]} (Debian packages) for the differential, browser and chaos tests"
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
	# The package starts a system-wide server on 6379; the tests start their own.
	$sudo systemctl disable --now redis-server >/dev/null 2>&1 || $sudo service redis-server stop >/dev/null 2>&1 || true
fi
echo "deps: $(redis-server --version | cut -d' ' -f1-3)"
