package testredis

import (
	"bufio"
	"net"
	"testing"
	"time"
)

func TestStart(t *testing.T) {
	addrs := map[string]bool{}
	for range 2 {
		addr := Start(t)
		if addrs[addr] {
			t.Fatalf("two servers on %s", addr)
		}
		addrs[addr] = true
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")); err != nil {
			t.Fatal(err)
		}
		rd := bufio.NewReader(c)
		for _, want := range []string{"+OK\r\n", "$1\r\n", "v\r\n"} {
			line, err := rd.ReadString('\n')
			if err != nil || line != want {
				t.Fatalf("got %q, %v; want %q", line, err, want)
			}
		}
		c.Close()
	}
}
