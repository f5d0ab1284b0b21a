module github.com/deadbolt/deadbolt

go 1.26.8

require (
	github.com/tidwall/btree v1.1.0 // indirect
	github.com/tidwall/match v1.1.1 // indirect
	github.com/tidwall/redcon v1.6.2 // indirect
	github.com/yuin/gopher-lua v1.1.2 // indirect
)
