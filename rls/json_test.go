package rls

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestJSON: /json answers 200 while within the limit, 429 over it, with
// the response in proto3 JSON, and 400 for what it cannot read.
func TestJSON(t *testing.T) {
	ts := startService(t, Options{})
	srv := httptest.NewServer(ts.svc.JSONHandler())
	defer srv.Close()
	post := func(body string) (int, string) {
		t.Helper()
		resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	body := `{"domain":"test","descriptors":[{"entries":[{"key":"user","value":"json"}]}]}`
	for i, wantCode := range []int{200, 200, 429} {
		code, out := post(body)
		var resp rlsv3.RateLimitResponse
		if err := protojson.Unmarshal([]byte(out), &resp); err != nil || code != wantCode {
			t.Fatalf("call %d: %d %s (%v), want %d", i, code, out, err, wantCode)
		}
		if wantCode == 429 && resp.OverallCode != rlsv3.RateLimitResponse_OVER_LIMIT {
			t.Errorf("call %d: %v", i, &resp)
		}
	}
	for _, bad := range []string{`{`, `{"domain":""}`, `{"domain":"test","descriptors":[{"entries":[{"key":"","value":"v"}]}]}`, `{"domain":"t\xff"}`} {
		if code, out := post(bad); code != 400 {
			t.Errorf("%q: %d %s, want 400", bad, code, out)
		}
	}
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", resp.StatusCode)
	}
}
