# The redis gem 4.8 (Debian's ruby-redis) over TLS, against a TLS-only
# deadbolt cluster (tls_clients_test.go runs it): a SET NX PX lock and its
# Lua release, with a client certificate. Arguments: the CA, the client
# certificate and key, the leader, a follower, a TLS Sentinel address.
require 'redis'
require 'openssl'

ca, cert, key, leader, follower, sentinel = ARGV
ssl_params = {
  ca_file: ca,
  cert: OpenSSL::X509::Certificate.new(File.read(cert)),
  key: OpenSSL::PKey.read(File.read(key)),
  verify_hostname: false # the certificates name 127.0.0.1 by IP, as Redis's do
}
RELEASE = 'if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) end return 0'

def hp(addr)
  h, _, p = addr.rpartition(':')
  { host: h, port: p.to_i }
end

def lock(r, name)
  raise "#{name}: SET NX refused" unless r.set(name, "tok-#{name}", nx: true, px: 10_000)
  raise "#{name}: a second SET NX succeeded" if r.set(name, 'other', nx: true, px: 10_000)
  n = r.eval(RELEASE, keys: [name], argv: ["tok-#{name}"])
  raise "#{name}: release answered #{n}" unless n == 1
end

tls = { ssl: true, ssl_params: ssl_params }
modes = {
  'leader' => -> { Redis.new(**hp(leader), **tls) },
  'follower' => -> { Redis.new(**hp(follower), **tls) },
  'sentinel' => -> { Redis.new(url: 'rediss://mymaster', sentinels: [hp(sentinel)], role: :master, **tls) },
  'cluster' => -> { Redis.new(cluster: ["rediss://#{follower}"], **tls) }
}
modes.each do |mode, open|
  lock(open.call, "tls:rb:#{mode}")
  puts "#{mode} ok"
end
