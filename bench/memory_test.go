package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParseInfo(t *testing.T) {
	text := "# Memory\r\nused_memory:672712\r\nused_memory_human:656.95K\r\nused_memory_dataset:209\r\n\r\n# Clients\r\nconnected_clients:1\r\n"
	f := parseInfo(text)
	if f["used_memory"] != "672712" || f["used_memory_dataset"] != "209" || f["connected_clients"] != "1" || f["used_memory_human"] != "656.95K" {
		t.Errorf("parseInfo = %v", f)
	}
	if _, ok := f["# Memory"]; ok {
		t.Error("a section title became a field")
	}
}

func TestGrowthPerKey(t *testing.T) {
	before := map[string]string{"used_memory": "1000000"}
	after := map[string]string{"used_memory": "209000000"}
	if got, err := growthPerKey(before, after, "used_memory", 1000000); err != nil || got != 208 {
		t.Errorf("growthPerKey = %v, %v; want 208", got, err)
	}
	if _, err := growthPerKey(before, after, "used_memory_dataset", 1); err == nil {
		t.Error("a missing field gave no error")
	}
}

func TestMemoryKeysAreSixteenBytes(t *testing.T) {
	for _, i := range []int{0, 7, 999999, 99999999} {
		if k := memoryKey(i); len(k) != memoryKeyLen {
			t.Errorf("memoryKey(%d) = %q, %d bytes", i, k, len(k))
		}
	}
}

func TestZaddArgsAsTheScriptWrites(t *testing.T) {
	start := time.UnixMicro(1795340811174919)
	got := fmt.Sprint(zaddArgs("k", 3, start))
	want := "[ZADD k 1795340811174 1795340811174919-0 1795340811175 1795340811175919-1 1795340811176 1795340811176919-2]"
	if got != want {
		t.Errorf("zaddArgs:\n got %s\nwant %s", got, want)
	}
}

func TestCheckAdmitted(t *testing.T) {
	ctx := context.Background()
	reply := func(v any) redis.Cmder {
		c := redis.NewCmd(ctx, "SW.THROTTLE", "k", 100, 3600)
		c.SetVal(v)
		return c
	}
	ok := []redis.Cmder{reply([]any{int64(0), int64(100), int64(99), int64(-1), int64(3600)}), reply("OK"), redis.NewStatusCmd(ctx, "SET")}
	if err := checkAdmitted(ok); err != nil {
		t.Errorf("admitted replies: %v", err)
	}
	limited := append(ok, reply([]any{int64(1), int64(100), int64(0), int64(5), int64(3600)}))
	if err := checkAdmitted(limited); err == nil || !strings.Contains(err.Error(), "was limited") {
		t.Errorf("a limited reply: %v", err)
	}
}
