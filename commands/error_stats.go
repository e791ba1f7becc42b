package commands

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// maxErrorCodes bounds how many error codes errorStats keeps apart. Redis
// 7.0 keeps every code; later Redis and Valkey stop at 128, so that replies
// whose first word varies (a script's, or here a shared store's) cannot
// grow INFO without end. Past it, a new code is counted under
// errorOverflowCode, as Valkey counts it.
const maxErrorCodes = 128

// errorOverflowCode is where errors of a new code are counted once
// maxErrorCodes codes are kept.
const errorOverflowCode = "ERRORSTATS_OVERFLOW"

// errorStats counts the error replies by code, for INFO errorstats and
// total_error_replies. It is safe for concurrent use; its zero value counts
// nothing yet. Counting an error of a code already seen allocates nothing.
type errorStats struct {
	mu sync.RWMutex // guards byCode: the map; its counts are atomic, added to under mu's read lock
	// byCode holds at most maxErrorCodes codes, and errorOverflowCode.
	byCode map[string]*atomic.Int64
}

// count counts one error reply of text msg.
func (s *errorStats) count(msg string) {
	code := errorCode(msg)
	s.mu.RLock()
	n := s.byCode[code]
	if n != nil {
		n.Add(1)
	}
	s.mu.RUnlock()
	if n != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n = s.byCode[code]; n == nil {
		if len(s.byCode) >= maxErrorCodes {
			code = errorOverflowCode
		}
		if n = s.byCode[code]; n == nil {
			if s.byCode == nil {
				s.byCode = make(map[string]*atomic.Int64)
			}
			n = new(atomic.Int64)
			s.byCode[strings.Clone(code)] = n // msg may be part of a larger string
		}
	}
	n.Add(1)
}

// total returns the number of error replies counted.
func (s *errorStats) total() int64 {
	s.mu.RLock()
	defer s.mu.RUnlock()
	sum := int64(0)
	for _, n := range s.byCode {
		sum += n.Load()
	}
	return sum
}

// reset forgets every code (CONFIG RESETSTAT).
func (s *errorStats) reset() {
	s.mu.Lock()
	s.byCode = nil
	s.mu.Unlock()
}

// write appends INFO errorstats' lines: one per code, in byte order as
// Redis's radix tree lists them, with the characters INFO reserves written
// as '_'.
func (s *errorStats) write(b *strings.Builder) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	codes := make([]string, 0, len(s.byCode))
	for code := range s.byCode {
		codes = append(codes, code)
	}
	slices.Sort(codes)
	for _, code := range codes {
		fmt.Fprintf(b, "errorstat_%s:count=%d\r\n", infoSafe.Replace(code), s.byCode[code].Load())
	}
}

// infoSafe replaces the characters that would break an INFO line, as
// Redis's getSafeInfoString does.
var infoSafe = strings.NewReplacer("#", "_", ":", "_", "\r", "_", "\n", "_")

// errorCode is the code of an error reply of text msg, found as Redis
// finds it: the first word, if a space ends it within the reply's first 32
// bytes ('-' included); otherwise ERR. CR and LF count as spaces, since
// the writer sends them as spaces.
func errorCode(msg string) string {
	if i := strings.IndexAny(msg[:min(len(msg), 31)], " \r\n"); i >= 0 {
		return msg[:i]
	}
	return "ERR"
}
