package batch

// Ladder are the sizes a batch's calls take, K items each: a fixed ladder
// keeps the schema of each size — and so the providers' prompt caches —
// the same from call to call and run to run. A K chosen for a batch
// (AutoSize) is a rung of it, and a call that cannot be answered whole is
// halved down it.
var Ladder = []int{1, 2, 4, 8, 16, 32, 64}

// Rung is the largest rung of the ladder not above n; 1 for n below 2.
func Rung(n int) int {
	r := Ladder[0]
	for _, k := range Ladder {
		if k <= n {
			r = k
		}
	}
	return r
}
