package deadbolt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A node started with an ACL file in error does not start, and says which
// file and line, as Redis does; nothing is half-loaded.
func TestACLFileErrorStopsStart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	text := "user default on nopass ~* &* +@all\nuser bad on +nosuchcommand\nuser other on ~* bogus\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	n, err := Start(Config{Addr: "127.0.0.1:0", ACLFile: path})
	if err == nil {
		n.Close()
		t.Fatal("started with an ACL file in error")
	}
	for _, want := range []string{path + ":2: Error in applying operation '+nosuchcommand'", path + ":3: Syntax error"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	// ACL LOAD's "no change to the previously active ACL rules" is
	// untrue at the start: there are none, and the node does not start.
	if strings.Contains(err.Error(), "previously active") || !strings.HasSuffix(err.Error(), "(the node does not start)") {
		t.Errorf("error %q: want no ACL LOAD warning, and that the node does not start", err)
	}
	if _, err := Start(Config{Addr: "127.0.0.1:0", ACLFile: filepath.Join(t.TempDir(), "missing.acl")}); err == nil || !strings.Contains(err.Error(), "missing.acl") {
		t.Errorf("a missing ACL file: %v", err)
	}
}

// ACL SAVE writes the users in the ACL file format; ACL LOAD reads them
// back; the users of the file are the node's from its start.
func TestACLFileSaveLoadRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "users.acl")
	start := "user default on nopass ~* &* +@all\nuser svc on #" + strings.Repeat("ab", 32) + " ~lock:* resetchannels -@all +@scripting\n"
	if err := os.WriteFile(path, []byte(start), 0o600); err != nil {
		t.Fatal(err)
	}
	n := RunT(t, func(c *Config) { c.ACLFile = path })
	c := client(t, n.Addr())
	list, err := c.Do(ctx, "ACL", "LIST").StringSlice()
	if err != nil || len(list) != 2 || !strings.HasPrefix(list[1], "user svc on #abab") {
		t.Fatalf("ACL LIST after start = %q, %v", list, err)
	}
	if err := c.Do(ctx, "ACL", "SETUSER", "new", "on", ">pw", "~x:*", "-@all", "+get").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "ACL", "SAVE").Err(); err != nil {
		t.Fatal(err)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	list, _ = c.Do(ctx, "ACL", "LIST").StringSlice()
	if string(saved) != strings.Join(list, "\n")+"\n" {
		t.Fatalf("saved file\n%s\nis not ACL LIST\n%s", saved, strings.Join(list, "\n"))
	}
	// Changed on disk, loaded: the file's users replace all others.
	if err := os.WriteFile(path, []byte(start), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "ACL", "LOAD").Err(); err != nil {
		t.Fatal(err)
	}
	if users, _ := c.Do(ctx, "ACL", "USERS").StringSlice(); strings.Join(users, ",") != "default,svc" {
		t.Fatalf("ACL USERS after LOAD = %v", users)
	}
	// A file in error is refused whole.
	if err := os.WriteFile(path, []byte("user a on\nnot a user line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = c.Do(ctx, "ACL", "LOAD").Err()
	if err == nil || !strings.Contains(err.Error(), ":2 should start with user keyword") {
		t.Fatalf("ACL LOAD of a bad file = %v", err)
	}
	if users, _ := c.Do(ctx, "ACL", "USERS").StringSlice(); strings.Join(users, ",") != "default,svc" {
		t.Fatalf("ACL USERS after a failed LOAD = %v", users)
	}
}
