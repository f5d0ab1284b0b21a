package server

import (
	"net"
)

// Protected mode, as Redis 7.0 has it: while it is on and the default
// user has no password, a client connecting from anywhere but the
// loopback addresses 127.0.0.1 and ::1 is told why in one error line and
// disconnected, before it can send a command.

// msgProtected is redis-server 7.0.15's text, byte for byte.
const msgProtected = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// refusedByProtectedMode reports whether a client at remote must be
// turned away now.
func (s *Server) refusedByProtectedMode(remote net.Addr) bool {
	if d := s.users().Default(); !s.adm.protected.Load() || d == nil || !d.NoPass {
		return false
	}
	return !localClient(remote)
}

// localClient is Redis's test: 127.0.0.1 or ::1 (not the rest of
// 127.0.0.0/8).
func localClient(a net.Addr) bool {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	return host == "127.0.0.1" || host == "::1"
}
