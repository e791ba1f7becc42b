package rls

import (
	"errors"
	"io"
	"net/http"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
)

// MaxJSONBody bounds a /json request's body.
const MaxJSONBody = 1 << 20

// JSONHandler returns the /json endpoint, as envoyproxy/ratelimit's: POST a
// RateLimitRequest in proto3 JSON; the answer is the RateLimitResponse in
// JSON, status 200 when OK and 429 when over the limit. A request that
// cannot be read or is refused gets 400 with the reason, a failed decision
// 503 (504 past the deadline).
func (s *Service) JSONHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST a RateLimitRequest as JSON", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxJSONBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read the request body", http.StatusBadRequest)
			return
		}
		var req rlsv3.RateLimitRequest
		if err := protojson.Unmarshal(body, &req); err != nil {
			http.Error(w, "invalid RateLimitRequest JSON: "+err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := s.ShouldRateLimit(r.Context(), &req)
		if err != nil {
			http.Error(w, status.Convert(err).Message(), httpStatus(err))
			return
		}
		out, err := protojson.Marshal(resp)
		if err != nil {
			http.Error(w, "cannot encode the response", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT {
			w.WriteHeader(http.StatusTooManyRequests)
		}
		w.Write(out)
	})
}

// httpStatus maps ShouldRateLimit's gRPC errors to HTTP statuses.
func httpStatus(err error) int {
	switch status.Code(err) {
	case codes.InvalidArgument:
		return http.StatusBadRequest
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	case codes.Canceled:
		return 499 // client closed the request, as nginx and Envoy log it
	}
	return http.StatusServiceUnavailable
}
