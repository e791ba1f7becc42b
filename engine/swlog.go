package engine

// swLog is a sliding-log key's recorded requests in arrival order: a ring of
// arrival times (ns since the epoch) with each request's quantity, 12 bytes
// a request. Not safe for concurrent use; guarded by the shard's lock.
type swLog struct {
	at    []int64
	n     []uint32
	head  int   // index of the oldest request
	size  int   // requests held
	total int64 // sum of n over the requests held
}

// swEntryBytes is what one recorded request costs.
const swEntryBytes = 12

// bytes is the memory the log's arrays take, for the keyspace's estimate.
func (l *swLog) bytes() int64 {
	if l == nil {
		return 0
	}
	return int64(cap(l.at))*8 + int64(cap(l.n))*4
}

// get returns the i-th oldest request.
func (l *swLog) get(i int) (at int64, n int64) {
	j := (l.head + i) % len(l.at)
	return l.at[j], int64(l.n[j])
}

// swView is what a sliding-log decision needs to apply it: how many of the
// oldest requests left the window.
type swView struct {
	drop int
}

// slidingLog decides a sliding-log request without changing the log: the
// requests recorded in the last Window, plus qty, must be at most Limit.
// A request recorded at t counts until t+Window.
func slidingLog(now int64, l *swLog, q WindowQuota, qty int64) (Decision, swView) {
	d := Decision{Limit: q.Limit, RetryAfter: -1}
	var v swView
	size, total := 0, int64(0)
	if l != nil {
		for v.drop < l.size {
			at, n := l.get(v.drop)
			if at+q.Window > now {
				break
			}
			v.drop++
			total -= n
		}
		size, total = l.size-v.drop, l.total+total
	}
	if qty <= q.Limit-total {
		d.Remaining = q.Limit - total - qty
		if size > 0 || qty > 0 {
			newest := now
			if qty == 0 {
				newest, _ = l.get(l.size - 1)
			}
			d.ResetAfter = newest + q.Window - now
		}
		return d, v
	}
	d.Limited = true
	d.Remaining = max(q.Limit-total, 0)
	if size > 0 {
		newest, _ := l.get(l.size - 1)
		d.ResetAfter = newest + q.Window - now
	}
	if qty > q.Limit {
		return d, v
	}
	// The request fits once enough of the oldest requests have left.
	need := total + qty - q.Limit
	for i := v.drop; i < l.size; i++ {
		at, n := l.get(i)
		need -= n
		if need <= 0 {
			d.RetryAfter = at + q.Window - now
			break
		}
	}
	return d, v
}

// apply drops the requests that left the window and records qty at now
// when the decision admitted it. It returns the change in the log's bytes.
func (l *swLog) apply(v swView, now int64, qty, limit int64, admitted bool) int64 {
	before := l.bytes()
	for ; v.drop > 0; v.drop-- {
		_, n := l.get(0)
		l.total -= n
		l.head = (l.head + 1) % len(l.at)
		l.size--
	}
	if admitted && qty > 0 {
		if l.size == len(l.at) {
			l.resize(growTo(len(l.at), l.size, limit))
		}
		j := (l.head + l.size) % len(l.at)
		l.at[j], l.n[j] = now, uint32(qty)
		l.size++
		l.total += qty
	}
	if len(l.at) > 16 && l.size <= len(l.at)/4 {
		l.resize(len(l.at) / 2)
	}
	return l.bytes() - before
}

// growTo is the capacity a full ring of c slots grows to: double, but never
// past the limit, since a log never holds more requests than its limit (each
// costs at least 1); so a key at its limit uses 12 bytes a request, not the
// up to 24 that doubling would leave. It is at least size+1, should the
// limit have been lowered since the requests were recorded.
func growTo(c, size int, limit int64) int {
	n := max(2*c, 4)
	if int64(n) > limit {
		n = int(max(limit, int64(size+1)))
	}
	return n
}

// resize moves the requests into arrays of capacity c, oldest first.
func (l *swLog) resize(c int) {
	at, n := make([]int64, c), make([]uint32, c)
	for i := 0; i < l.size; i++ {
		at[i], n[i] = l.get0(i)
	}
	l.at, l.n, l.head = at, n, 0
}

// get0 is get with the quantity as stored.
func (l *swLog) get0(i int) (int64, uint32) {
	j := (l.head + i) % len(l.at)
	return l.at[j], l.n[j]
}

// newest returns the arrival time of the newest request; the log must not
// be empty.
func (l *swLog) newest() int64 {
	at, _ := l.get(l.size - 1)
	return at
}
