package luaexec

// rand48 is the 48-bit linear congruential generator behind Redis's
// math.random (the classic drand48 family: x = (0x5DEECE66D*x + 0xB) mod
// 2^48, results are the top 31 bits). Redis 7.0 never reseeds it between
// scripts; only math.randomseed does.
type rand48 struct {
	x uint64
}

const (
	rand48Mul  = 0x5DEECE66D
	rand48Add  = 0xB
	rand48Mask = 1<<48 - 1
	rand48Init = 0x1234ABCD330E // the state before any seeding
	lrand48Max = 1<<31 - 1      // INT32_MAX
)

func (r *rand48) reset() { r.x = rand48Init }

func (r *rand48) state() uint64 { return r.x }

func (r *rand48) setState(s uint64) { r.x = s & rand48Mask }

// seed is redisSrand48: the low 16 bits stay 0x330E.
func (r *rand48) seed(s int32) {
	u := uint64(uint32(s))
	r.x = 0x330E | (u&0xFFFF)<<16 | (u>>16&0xFFFF)<<32
}

// next returns the next value in [0, 2^31).
func (r *rand48) next() int32 {
	r.x = (rand48Mul*r.x + rand48Add) & rand48Mask
	return int32(r.x >> 17)
}

// float returns a number in [0, 1) as Redis's math.random computes it.
func (r *rand48) float() float64 {
	return float64(r.next()%lrand48Max) / float64(lrand48Max)
}
