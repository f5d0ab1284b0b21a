# The Ruby row of the compatibility matrix (docs/COMPATIBILITY.md): Debian's
# ruby-redis (the redis gem 4.8), unmodified, with the lock Ruby
# applications write on it: SET key token NX PX to take it, a Lua
# compare-and-PEXPIRE to extend it and a Lua compare-and-DEL to release it
# (EVALSHA, EVAL on NOSCRIPT):
#
#     ruby locks.rb MODE
#
# MODE is single or direct (Redis.new on one address), sentinel
# (Redis.new(url: "redis://MASTER", sentinels:)) or cluster
# (Redis.new(cluster:)). The
# phase and addresses come from the environment (COMPAT_*, set by
# cmd/deadbolt-compat). In the check phase the transcript runs and the exit
# code says how it went; in the failover phase two threads, each with its
# own client, contend for one lock; READY, KILLING/ARMED, KILLED and the
# RECOVERED line are the same protocol as the other rows'.

require 'redis'
require 'securerandom'
require 'digest/sha1'

START = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def now
  Process.clock_gettime(Process::CLOCK_MONOTONIC)
end

def log(msg)
  $stdout.puts format('%7.3fs %s', now - START, msg)
  $stdout.flush
end

class Fail < StandardError; end

def expect(cond, msg)
  raise Fail, msg unless cond
end

def split(v)
  (v || '').split(',').map(&:strip).reject(&:empty?)
end

def hostport(addr)
  h, _, p = addr.rpartition(':')
  [h, p.to_i]
end

class Env
  attr_reader :mode, :phase, :addrs, :direct, :sentinels, :master, :prefix, :limit, :user, :pass

  def initialize(mode)
    @mode = mode
    @phase = ENV['COMPAT_PHASE'] || 'check'
    @addrs = split(ENV['COMPAT_ADDRS'])
    @direct = ENV['COMPAT_DIRECT'] || @addrs.first
    @sentinels = split(ENV['COMPAT_SENTINELS'])
    @master = ENV['COMPAT_MASTER'] || 'mymaster'
    @prefix = ENV['COMPAT_PREFIX'] || "compat-rb-#{Time.now.to_i}:"
    @limit = (ENV['COMPAT_TIMEOUT'] || '90s').delete_suffix('s').to_f
    @user = ENV['COMPAT_USER']
    @pass = ENV['COMPAT_PASS']
  end

  def key(name)
    prefix + name
  end

  # client is the Redis an application makes for the mode, logged in as
  # the run's ACL user (Sentinel connections too).
  def client
    common = { username: user, password: pass, connect_timeout: 2, timeout: 5, reconnect_attempts: 1 }
    case mode
    when 'single', 'direct'
      h, p = hostport(direct)
      Redis.new(host: h, port: p, **common)
    when 'sentinel'
      ss = sentinels.map { |a| h, p = hostport(a); { host: h, port: p, username: user, password: pass } }
      # The master's name is the URL's host (redis-rb 4.x has no name:).
      Redis.new(url: "redis://#{master}", sentinels: ss, role: :master, **common)
    when 'cluster'
      Redis.new(cluster: addrs.map { |a| "redis://#{a}" }, **common)
    else
      raise Fail, "no redis-rb client for mode #{mode}"
    end
  end
end

# The lock: SET NX PX with a random token; extend and release compare the
# token inside Lua.
class TokenLock
  EXTEND = <<~LUA
    if redis.call("get", KEYS[1]) == ARGV[1] then
      return redis.call("pexpire", KEYS[1], ARGV[2])
    end
    return 0
  LUA
  RELEASE = <<~LUA
    if redis.call("get", KEYS[1]) == ARGV[1] then
      return redis.call("del", KEYS[1])
    end
    return 0
  LUA

  attr_reader :name, :token

  def initialize(redis, name)
    @redis = redis
    @name = name
    @token = SecureRandom.hex(16)
  end

  def acquire(ttl_ms)
    @redis.set(name, token, nx: true, px: ttl_ms)
  end

  def extend_to(ttl_ms)
    script(EXTEND, ttl_ms) == 1
  end

  def release
    script(RELEASE) == 1
  end

  private

  def script(src, *args)
    sha = Digest::SHA1.hexdigest(src)
    @redis.evalsha(sha, keys: [name], argv: [token, *args])
  rescue Redis::CommandError => e
    raise unless e.message.start_with?('NOSCRIPT')

    @redis.eval(src, keys: [name], argv: [token, *args])
  end
end

# refused: the run's ACL user is held to its rules: FLUSHALL is refused with
# NOPERM for the command, and EVAL (which the user may run) given a key
# outside the run's prefix with NOPERM for the key.
def refused(env, r)
  expect(env.user, 'COMPAT_USER is not set: the matrix runs every client as a limited ACL user')
  log "--- ACL: the user #{env.user} may not go outside its rules"
  [
    [-> { r.flushall }, 'FLUSHALL', "NOPERM this user has no permissions to run the 'flushall' command"],
    [-> { r.eval('return 1', keys: ["compat:outside:#{env.user}"]) }, 'EVAL', 'NOPERM this user has no permissions to access one of the keys used as arguments']
  ].each do |call, what, want|
    begin
      got = call.call
    rescue Redis::CommandError => e
      expect(e.message == want, "#{what} as #{env.user}: #{e.message}, want #{want}")
      log "#{what}: #{e.message}"
      next
    rescue Redis::Cluster::CommandErrorCollection => e
      # The Cluster client sends FLUSHALL to every master and collects
      # their errors.
      msgs = e.errors.map { |node, err| "#{node}: #{err.message}" }
      expect(!msgs.empty? && e.errors.values.all? { |err| err.message == want }, "#{what} as #{env.user}: #{msgs.join('; ')}, want #{want}")
      log "#{what}: #{msgs.join('; ')}"
      next
    end
    raise Fail, "#{what} as #{env.user} answered #{got.inspect}, want NOPERM"
  end
end

def check(env)
  r = env.client
  expect(r.ping == 'PONG', 'PING')
  refused(env, r)

  log '--- acquire, a second owner refused, extend, release'
  # The second owner's client is made (and connected) first: a Cluster
  # client's first command loads the slot map, which on a loaded machine
  # can take longer than a short lease.
  other_client = env.client
  expect(other_client.ping == 'PONG', "the second owner's PING")
  name = env.key('lock:1')
  lock = TokenLock.new(r, name)
  expect(lock.acquire(10_000) == true, 'SET NX PX of a free lock')
  expect(r.get(name) == lock.token, "GET #{name} = #{r.get(name).inspect}, want the token")
  pttl = r.pttl(name)
  expect(pttl.positive? && pttl <= 10_000, "PTTL after acquire = #{pttl}, want within 10000")
  other = TokenLock.new(other_client, name)
  expect(other.acquire(10_000) == false, 'a second owner acquired a held lock')
  expect(r.get(name) == lock.token, "the second owner's SET NX changed the value")
  expect(!other.extend_to(30_000), "another owner's extend answered 1")
  expect(lock.extend_to(30_000), "the owner's extend answered 0")
  pttl = r.pttl(name)
  expect(pttl > 20_000 && pttl <= 30_000, "PTTL after extend to 30000 = #{pttl}")
  expect(!other.release, "another owner's release answered 1")
  expect(r.exists?(name), "another owner's release removed the lock")
  expect(lock.release, "the owner's release answered 0")
  expect(!r.exists?(name), 'the key survived release')
  expect(!lock.release, 'a second release answered 1')

  log '--- expiry: the lease runs out, another owner takes it, the old owner cannot extend or release'
  name = env.key('lock:2')
  short = TokenLock.new(r, name)
  expect(short.acquire(300), 'SET NX PX 300')
  sleep 0.6
  expect(r.get(name).nil?, 'the key outlived its 300 ms lease')
  nxt = TokenLock.new(r, name)
  expect(nxt.acquire(5000), 'another owner after the expiry')
  expect(!short.extend_to(5000), "the old owner's extend answered 1")
  expect(!short.release, "the old owner's release answered 1")
  expect(r.get(name) == nxt.token, "the old owner touched the new owner's lock")
  expect(nxt.release, 'release')

  log '--- a retrying acquire waits for the holder to release'
  name = env.key('lock:3')
  holder = TokenLock.new(env.client, name)
  expect(holder.acquire(10_000), 'acquire')
  t = Thread.new { sleep 0.4; holder.release }
  waiter = TokenLock.new(r, name)
  began = now
  got = false
  while now - began < 5
    break if (got = waiter.acquire(5000))

    sleep 0.05
  end
  took = now - began
  expect(t.value == true, "the holder's release answered 0")
  expect(got, 'the waiter did not get the lock after its release')
  expect(took >= 0.3 && took < 3, format('granted after %.2fs, want soon after the release at 0.4 s', took))
  log format('granted %.2fs after the holder took it', took)
  expect(waiter.release, 'release')
end

def failover(env)
  name = env.key('lock:failover')
  mu = Mutex.new
  st = { inside: 0, overlap: nil, grants: [0, 0], armed: false, killed_at: nil, after: 0,
         errs_before: 0, errs_after: 0, last_err: '' }
  stop = false
  workers = [0, 1].map do |w|
    Thread.new do
      r = nil
      until stop
        began = now
        err = nil
        ok = false
        begin
          r ||= env.client
          lock = TokenLock.new(r, name)
          deadline = now + 0.3
          got = false
          until (got = lock.acquire(4000)) || now > deadline
            sleep 0.05
          end
          if got
            ok = true
            mu.synchronize do
              st[:inside] += 1
              st[:overlap] = "#{st[:inside]} holders of the lock" if st[:inside] > 1
            end
            sleep 0.02
            mu.synchronize { st[:inside] -= 1 }
            raise Fail, 'release answered 0' unless lock.release
          end
        rescue Redis::BaseError, Fail => e
          err = "#{e.class}: #{e.message}"
          ok = false
          begin
            r&.close
          rescue StandardError
            nil
          end
          r = nil
        end
        mu.synchronize do
          killed = !st[:killed_at].nil?
          if err
            st[killed || st[:armed] ? :errs_after : :errs_before] += 1
            st[:last_err] = err
          elsif ok
            st[:grants][w] += 1
            st[:after] += 1 if killed && began > st[:killed_at]
          end
        end
        log "worker #{w}: #{err}" if err
        sleep 0.25
      end
    end
  end

  killed = false
  eof = false
  Thread.new do
    $stdin.each_line do |line|
      case line.strip
      when 'KILLING'
        mu.synchronize { st[:armed] = true }
        $stdout.puts 'ARMED'
        $stdout.flush
      when 'KILLED'
        killed = true
        break
      end
    end
    eof = true unless killed
  end

  ready = false
  deadline = START + env.limit
  loop do
    s = mu.synchronize { st.merge(grants: st[:grants].dup) }
    raise Fail, "mutual exclusion broken: #{s[:overlap]}" if s[:overlap]

    if !ready && s[:grants].all?(&:positive?)
      ready = true
      log 'both workers have held the lock'
      $stdout.puts 'READY'
      $stdout.flush
    end
    if s[:killed_at] && s[:after] >= 3
      log format('RECOVERED: %d grants %.1fs after the kill; errors: %d before the kill, %d after (last: %s)',
                 s[:after], now - s[:killed_at], s[:errs_before], s[:errs_after], s[:last_err])
      return
    end
    if killed && s[:killed_at].nil?
      mu.synchronize { st[:killed_at] = now }
      log 'KILLED received'
    end
    raise Fail, 'stdin closed before KILLED' if eof
    if now > deadline
      raise Fail, format('deadline: ready=%s grants=%s after kill=%d errors before/after kill=%d/%d (last: %s)',
                         ready, s[:grants].inspect, s[:after], s[:errs_before], s[:errs_after], s[:last_err])
    end
    sleep 0.02
  end
ensure
  stop = true
end

if ARGV.length != 1
  warn 'usage: locks.rb MODE'
  exit 2
end
env = Env.new(ARGV[0])
log "ruby #{RUBY_VERSION}, redis gem #{Redis::VERSION}, mode #{env.mode}, phase #{env.phase}"
begin
  env.phase == 'check' ? check(env) : failover(env)
rescue Fail => e
  warn format('locks.rb: FAIL after %.1fs: %s', now - START, e.message)
  exit 1
end
exit 0
