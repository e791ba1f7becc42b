package server

// Sizes of a connection's read buffer.
const (
	// readBufSize is the buffer a connection starts with and returns to,
	// as small as a client's memory should be while one read still brings
	// a pipeline of dozens of commands.
	readBufSize = 4 << 10
	// minReadRoom is the least room a read is given: with less free at the
	// buffer's end, the unparsed bytes move to its start or it grows.
	minReadRoom = 1 << 10
	// maxKeptScratch bounds the argument and inline scratch kept between
	// requests.
	maxKeptScratch = 1024
)

// requestReader holds the bytes a client has sent and parses requests out
// of them in place: the arguments it returns point into its buffer, so a
// request costs no copy and, in steady state, no allocation. The buffer
// grows only as bytes arrive, never to the size a length header announces,
// and only while one request is bigger than it; parse bounds every request
// by the limits, so the buffer is bounded too. Once the big request is
// done, shrink gives the memory back.
//
// A requestReader is not safe for concurrent use.
type requestReader struct {
	lim  limits
	buf  []byte // buf[r:w] are received and not yet parsed
	r, w int

	args  [][]byte // the last request's arguments, reused
	words []byte   // an inline request's arguments, back to back
	ends  []int    // where each inline argument ends in words

	// The multibulk request in progress, if its count line has been read;
	// offsets are from its start, buf[r].
	inMulti  bool
	argsLeft int64  // arguments still to come
	pos      int    // where the next "$N" line or argument starts
	bulk     int64  // the length of the argument at pos, -1 until its line is read
	spans    []span // the arguments read so far
	scan     int    // where the search for the current line's end goes on
}

// newRequestReader returns a reader enforcing lim; its buffer is allocated
// by the first fill.
func newRequestReader(lim limits) requestReader {
	return requestReader{lim: lim}
}

// room returns where the next read goes: free space at the end of the
// buffer, at least minReadRoom, made by moving the unparsed bytes to the
// buffer's start or, when they fill more than half of it, by doubling it.
func (rd *requestReader) room() []byte {
	if rd.r == rd.w {
		rd.r, rd.w = 0, 0
	}
	if rd.buf == nil {
		rd.buf = make([]byte, readBufSize)
	}
	if len(rd.buf)-rd.w >= minReadRoom {
		return rd.buf[rd.w:]
	}
	unparsed := rd.w - rd.r
	if rd.r > 0 && unparsed <= len(rd.buf)/2 {
		copy(rd.buf, rd.buf[rd.r:rd.w])
	} else {
		grown := make([]byte, 2*len(rd.buf))
		copy(grown, rd.buf[rd.r:rd.w])
		rd.buf = grown
	}
	rd.r, rd.w = 0, unparsed
	return rd.buf[rd.w:]
}

// filled records that n bytes were read into the slice room returned.
func (rd *requestReader) filled(n int) { rd.w += n }

// shrink gives back a buffer grown for a big request once nothing is left
// to parse, and scratch grown for one with many arguments.
func (rd *requestReader) shrink() {
	if len(rd.buf) > readBufSize && rd.r == rd.w {
		rd.buf, rd.r, rd.w = nil, 0, 0
	}
	if cap(rd.args) > maxKeptScratch {
		rd.args = nil
	}
	if cap(rd.spans) > maxKeptScratch && !rd.inMulti {
		rd.spans = nil
	}
	if cap(rd.words) > readBufSize {
		rd.words, rd.ends = nil, nil
	}
}
