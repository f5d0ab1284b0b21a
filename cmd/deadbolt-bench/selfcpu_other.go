//go:build !unix

package main

import "time"

// selfCPU is unknown here: gen cpu/op reads 0.
func selfCPU() time.Duration { return 0 }
