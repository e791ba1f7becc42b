package persist

import (
	"strings"
	"testing"

	"github.com/cellserver/cellserver/persist/redistest"
)

// TestLeaseSecondWriter: a second write-behind instance on the same store
// and prefix is told, in a warning naming shared mode; one on another
// prefix is not; once the first stops, the second takes the lease.
func TestLeaseSecondWriter(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	var logs1, logs2, logs3 logBuffer
	first := StartLease(rdb, "app:", logs1.logger())
	first.check() // the start's look may still be under way: look again, in order
	second := StartLease(rdb, "app:", logs2.logger())
	second.check()
	other := StartLease(rdb, "other:", logs3.logger())
	other.check()
	defer second.Close()
	defer other.Close()

	if first.Contested() {
		t.Error("the first writer sees a contest")
	}
	if !second.Contested() {
		t.Error("the second writer on the same prefix does not see the first")
	}
	if !strings.Contains(logs2.String(), "--backing-mode shared") || strings.Count(logs2.String(), "level=WARN") != 1 {
		t.Errorf("the second writer's log should warn once, naming shared mode:\n%s", logs2.String())
	}
	if other.Contested() || strings.Contains(logs3.String(), "WARN") {
		t.Errorf("a writer on another prefix is warned:\n%s", logs3.String())
	}
	if strings.Contains(logs1.String(), "WARN") {
		t.Errorf("the first writer is warned:\n%s", logs1.String())
	}

	first.Close()
	second.check()
	if second.Contested() {
		t.Error("the lease is not taken over once the first writer has stopped")
	}
}
