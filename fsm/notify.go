package fsm

import (
	"strconv"

	"github.com/deadbolt/deadbolt/resp"
)

// Keyspace notifications (Redis's notify-keyspace-events). The setting is
// replicated state: CONFIG SET proposes __setconfig through the log, so
// every node emits the same events from the same entry. An event is a
// published message (an effect), which each node delivers to its own
// subscribers after applying, and never for entries it replays at start.
// Reads do not go through the log, so "keymiss" (m) events are not sent.

// Notification classes, as Redis numbers them.
const (
	notifyKeyspace = 1 << iota // K
	notifyKeyevent             // E
	notifyGeneric              // g
	notifyString               // $
	notifyList                 // l
	notifySet                  // s
	notifyHash                 // h
	notifyZSet                 // z
	notifyExpired              // x
	notifyEvicted              // e
	notifyStream               // t
	notifyKeyMiss              // m
	notifyModule               // d
	notifyNew                  // n

	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash | notifyZSet |
		notifyExpired | notifyEvicted | notifyStream | notifyModule // A
)

// classLetters are the class letters in the order Redis prints them.
var classLetters = []struct {
	c    byte
	flag int
}{
	{'g', notifyGeneric}, {'$', notifyString}, {'l', notifyList}, {'s', notifySet}, {'h', notifyHash},
	{'z', notifyZSet}, {'x', notifyExpired}, {'e', notifyEvicted}, {'t', notifyStream}, {'d', notifyModule},
	{'n', notifyNew},
}

// ParseNotifyFlags parses a notify-keyspace-events value; ok is false for
// a character that names no class.
func ParseNotifyFlags(s string) (flags int, ok bool) {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 'A':
			flags |= notifyAll
		case 'K':
			flags |= notifyKeyspace
		case 'E':
			flags |= notifyKeyevent
		case 'm':
			flags |= notifyKeyMiss
		default:
			found := false
			for _, l := range classLetters {
				if l.c == c {
					flags |= l.flag
					found = true
				}
			}
			if !found {
				return 0, false
			}
		}
	}
	return flags, true
}

// NotifyFlagsString prints flags as CONFIG GET notify-keyspace-events
// does. Like Redis 7.0, it leaves out n when A is printed (the class
// stays on).
func NotifyFlagsString(flags int) string {
	var b []byte
	if flags&notifyAll == notifyAll {
		b = append(b, 'A')
	} else {
		for _, l := range classLetters {
			if flags&l.flag != 0 {
				b = append(b, l.c)
			}
		}
	}
	if flags&notifyKeyspace != 0 {
		b = append(b, 'K')
	}
	if flags&notifyKeyevent != 0 {
		b = append(b, 'E')
	}
	if flags&notifyKeyMiss != 0 {
		b = append(b, 'm')
	}
	return string(b)
}

// notify publishes a keyspace event for key, if its class is on.
func (c *Ctx) notify(class int, event string, key []byte) {
	flags := c.f.notify
	if flags&class == 0 || flags&(notifyKeyspace|notifyKeyevent) == 0 {
		return
	}
	db := strconv.Itoa(c.dbIndex)
	// Not counted as a PUBLISH's receivers inside MULTI (tx 0).
	if flags&notifyKeyspace != 0 {
		c.publishTx([]byte("__keyspace@"+db+"__:"+string(key)), []byte(event), false, 0)
	}
	if flags&notifyKeyevent != 0 {
		c.publishTx([]byte("__keyevent@"+db+"__:"+event), key, false, 0)
	}
}

// Replicated settings: CONFIG parameters whose value is state machine
// state, set through the log (__setconfig) and kept in snapshots as they
// were given (f.settings), so that a restore sets the same state.
var replicatedSettings = map[string]func(f *FSM, v string) bool{
	"notify-keyspace-events": func(f *FSM, v string) bool {
		flags, ok := ParseNotifyFlags(v)
		if ok {
			f.notify = flags
			f.settings["notify-keyspace-events"] = v
			if flags == 0 {
				delete(f.settings, "notify-keyspace-events") // snapshots stay version 1
			}
		}
		return ok
	},
}

// settingDefaults are replicated settings' values while unset.
var settingDefaults = map[string]string{}

// SetConfigCommand sets a replicated setting (CONFIG SET, through the
// log).
func SetConfigCommand(name, value string) Command {
	return Command{Args: [][]byte{[]byte("__setconfig"), []byte(name), []byte(value)}}
}

// Setting returns a replicated setting's value as CONFIG GET shows it
// ("" when unset).
func (f *FSM) Setting(name string) string {
	if name == "notify-keyspace-events" {
		return NotifyFlagsString(f.notify)
	}
	if v, ok := f.settings[name]; ok {
		return v
	}
	return settingDefaults[name]
}

// IsReplicatedSetting reports whether CONFIG SET of name goes through the
// log.
func IsReplicatedSetting(name string) bool {
	_, ok := replicatedSettings[name]
	return ok
}

func cmdSetConfig(c *Ctx, args [][]byte) resp.Reply {
	c.mustWrite()
	set, ok := replicatedSettings[string(args[1])]
	if !ok || !set(c.f, string(args[2])) {
		return resp.Err("ERR bad replicated setting")
	}
	return resp.OK
}
