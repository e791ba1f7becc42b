// Package rls is Envoy's rate limit service (RLS v3,
// envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit) over
// cellserver's limiter: it matches each descriptor to a configured limit
// (through a Matcher), decides all of a request's descriptors all or
// nothing (through a Decider: the in-memory engine or shared mode's
// store), and answers per descriptor, over gRPC and as JSON over HTTP.
package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/cellserver/cellserver/engine"
)

// Bounds on a request, beyond which it is refused with InvalidArgument.
const (
	// MaxDescriptors is the most descriptors one request may carry.
	MaxDescriptors = 64
	// MaxEntries is the most entries one descriptor may carry.
	MaxEntries = 32
	// MaxEntryLen bounds an entry's key, in bytes (Envoy's configuration
	// names it).
	MaxEntryLen = 1024
	// MaxValueLen bounds an entry's value, in bytes: above Envoy's own
	// bound on a request's headers (60 KiB by default), so that no value
	// Envoy sends is refused, which would leave the request's every limit
	// uncounted. A value longer than config.LongValue is counted under its
	// digest.
	MaxValueLen = 64 << 10
	// MaxDomainLen bounds the domain, in bytes.
	MaxDomainLen = 256
	// MaxHitsAddend bounds a hits_addend.
	MaxHitsAddend = 1 << 32
)

// DefaultTimeout is a request's deadline when Options.Timeout is zero.
const DefaultTimeout = time.Second

// Default header names, as envoyproxy/ratelimit's LIMIT_LIMIT_HEADER,
// LIMIT_REMAINING_HEADER and LIMIT_RESET_HEADER default.
const (
	DefaultLimitHeader     = "RateLimit-Limit"
	DefaultRemainingHeader = "RateLimit-Remaining"
	DefaultResetHeader     = "RateLimit-Reset"
)

// Options configures a Service. The zero value of each field but Decider
// works.
type Options struct {
	// Decider decides the rules; required.
	Decider Decider
	// Limits is the configuration at start; nil limits nothing (every
	// descriptor OK) until SetLimits.
	Limits Matcher
	// Timeout bounds each request, the store's wait included; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// ResponseHeaders adds the RateLimit-* headers to every response with
	// a limit in it, from the descriptor with the least remaining
	// (--rls-response-headers).
	ResponseHeaders bool
	// LimitHeader, RemainingHeader and ResetHeader name those headers;
	// empty means the defaults above.
	LimitHeader, RemainingHeader, ResetHeader string
}

// Service answers ShouldRateLimit. It is safe for concurrent use; its
// configuration is swapped whole by SetLimits.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer

	opts    Options
	limits  limits
	metrics *serviceMetrics
}

// New returns a Service deciding with opts.Decider.
func New(opts Options) *Service {
	if opts.Decider == nil {
		panic("rls: New without a Decider")
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.LimitHeader == "" {
		opts.LimitHeader = DefaultLimitHeader
	}
	if opts.RemainingHeader == "" {
		opts.RemainingHeader = DefaultRemainingHeader
	}
	if opts.ResetHeader == "" {
		opts.ResetHeader = DefaultResetHeader
	}
	s := &Service{opts: opts, metrics: newServiceMetrics()}
	s.limits.store(opts.Limits)
	return s
}

// SetLimits replaces the configuration; requests under way finish with
// the one they started with.
func (s *Service) SetLimits(m Matcher) { s.limits.store(m) }

// Register registers the service on g.
func (s *Service) Register(g *grpc.Server) { rlsv3.RegisterRateLimitServiceServer(g, s) }

// errInvalid marks a request refused for its content (InvalidArgument).
type errInvalid struct{ msg string }

func (e errInvalid) Error() string { return e.msg }

func invalidf(format string, args ...any) error { return errInvalid{fmt.Sprintf(format, args...)} }

// ShouldRateLimit decides a request: each descriptor is matched to a limit,
// every counted descriptor is decided together all or nothing, and the
// response says per descriptor OK or OVER_LIMIT.
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	start := time.Now()
	resp, err := s.decide(ctx, req)
	s.metrics.request(time.Since(start), resp, err)
	if err != nil {
		var inv errInvalid
		switch {
		case errors.As(err, &inv):
			return nil, status.Error(codes.InvalidArgument, err.Error())
		case errors.Is(err, context.DeadlineExceeded):
			return nil, status.Error(codes.DeadlineExceeded, "rls: no decision within the request's deadline")
		case errors.Is(err, context.Canceled):
			return nil, status.Error(codes.Canceled, "rls: request canceled")
		case errors.Is(err, engine.ErrWrongType):
			return nil, status.Error(codes.FailedPrecondition, "rls: a limit's key holds another kind of limit (changed algorithm? it is reset by DEL or expiry): "+err.Error())
		case errors.Is(err, engine.ErrOutOfMemory):
			return nil, status.Error(codes.ResourceExhausted, "rls: "+err.Error())
		}
		return nil, status.Error(codes.Unavailable, "rls: "+err.Error())
	}
	return resp, nil
}

// slot is one descriptor's part in a request.
type slot struct {
	limit   *Limit
	qty     int64
	rule    int // index into the rules decided together; -1 for none
	entries []Entry
}

func (s *Service) decide(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	// >> Args
	if err := validate(req); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	m := s.limits.load()
	slots := make([]slot, len(req.Descriptors))
	for i, d := range req.Descriptors {
		sl := &slots[i]
		sl.rule = -1
		sl.qty = hitsAddend(req, i)
		sl.entries = make([]Entry, len(d.Entries))
		for j, e := range d.Entries {
			sl.entries[j] = Entry{e.Key, e.Value}
		}
		if o, ok := m.(Overrider); ok && d.Limit != nil {
			// The proto's units number as the response's.
			sl.limit = o.Override(req.Domain, sl.entries, rlsv3.RateLimitResponse_RateLimit_Unit(d.Limit.Unit), d.Limit.RequestsPerUnit)
		}
		if m != nil && sl.limit == nil {
			sl.limit = m.Match(req.Domain, sl.entries)
		}
	}
	applyReplaces(slots)

	// >> Operation: the enforced rules together (a key named twice is one
	// rule with the quantities summed), then each shadow-mode rule alone,
	// so that it never holds the others back.
	var rules []engine.Rule
	var qtys []int64
	byKey := map[string]int{}
	blocked := false // an enforced descriptor that Blocks has a hit
	for i := range slots {
		sl := &slots[i]
		if sl.limit == nil || sl.limit.Unlimited || sl.limit.limitsNothing() {
			continue
		}
		if sl.limit.Blocks {
			blocked = blocked || sl.qty > 0
			continue
		}
		k := string(sl.limit.Rule.Key)
		if j, ok := byKey[k]; ok {
			sl.rule = j
			qtys[j] += sl.qty
			continue
		}
		byKey[k] = len(rules)
		sl.rule = len(rules)
		rules = append(rules, sl.limit.Rule)
		qtys = append(qtys, sl.qty)
	}
	for j := range qtys {
		qtys[j] = boundedQuantity(rules[j], qtys[j])
	}
	each := make([]engine.Decision, len(rules))
	if len(rules) > 0 {
		if err := s.decideRules(ctx, rules, qtys, each, blocked); err != nil {
			return nil, err
		}
	}
	shadow := make([]engine.Decision, len(slots))
	for i := range slots {
		sl := &slots[i]
		if sl.limit == nil || sl.limit.Unlimited || !sl.limit.limitsNothing() {
			continue
		}
		if sl.limit.Blocks {
			shadow[i] = blockedDecision(sl.qty, sl.limit)
			continue
		}
		if _, err := s.opts.Decider.DecideAll(ctx, []engine.Rule{sl.limit.Rule}, []int64{boundedQuantity(sl.limit.Rule, sl.qty)}, shadow[i:i+1]); err != nil {
			return nil, err
		}
	}

	// >> Response
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK,
		Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(slots))}
	var headerFrom *rlsv3.RateLimitResponse_DescriptorStatus
	now := s.opts.Decider.Now()
	for i := range slots {
		sl := &slots[i]
		st := &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		resp.Statuses[i] = st
		switch {
		case sl.limit == nil:
			continue
		case sl.limit.Unlimited:
			st.LimitRemaining = math.MaxUint32
			continue
		}
		d := shadow[i]
		switch {
		case sl.rule >= 0:
			d = each[sl.rule]
		case sl.limit.Blocks && !sl.limit.limitsNothing():
			d = blockedDecision(sl.qty, sl.limit)
		}
		st.CurrentLimit = &rlsv3.RateLimitResponse_RateLimit{Name: sl.limit.Name,
			RequestsPerUnit: sl.limit.RequestsPerUnit, Unit: sl.limit.Unit}
		st.LimitRemaining = uint32(min(max(d.Remaining, 0), math.MaxUint32))
		if d.Limited {
			st.LimitRemaining = 0 // as envoyproxy/ratelimit, whatever the hit would have left
		}
		reset := d.ResetAfter
		if w := sl.limit.Rule.Window.Window; reset <= 0 && sl.limit.Rule.Family == engine.FamilyFW && w > 0 {
			// Nothing counted in the window: it ends all the same (windows
			// are aligned to the epoch), as envoyproxy/ratelimit says.
			reset = w - now.UnixNano()%w
		}
		st.DurationUntilReset = durationpb.New(time.Duration(max(reset, 0)))
		s.metrics.descriptor(req.Domain, sl.limit, sl.qty, d)
		// The headers come from the descriptor with the least left, or
		// from the last one over its limit, as envoyproxy/ratelimit's do.
		if headerFrom == nil || st.LimitRemaining < headerFrom.LimitRemaining {
			headerFrom = st
		}
		if d.Limited && !sl.limit.limitsNothing() {
			st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
			resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
			headerFrom = st
		}
	}
	if s.opts.ResponseHeaders && headerFrom != nil {
		resp.ResponseHeadersToAdd = []*corev3.HeaderValue{
			{Key: s.opts.LimitHeader, Value: strconv.FormatUint(uint64(headerFrom.CurrentLimit.RequestsPerUnit), 10)},
			{Key: s.opts.RemainingHeader, Value: strconv.FormatUint(uint64(headerFrom.LimitRemaining), 10)},
			{Key: s.opts.ResetHeader, Value: strconv.FormatInt(ceilSeconds(headerFrom.DurationUntilReset.AsDuration()), 10)},
		}
	}
	return resp, nil
}

// decideRules decides the enforced rules all or nothing. When another
// descriptor of the request Blocks (blocked), the request is over its limit
// whatever the rules say: they are only read (quantity 0), and a rule is
// over when it could not have taken its own quantity.
func (s *Service) decideRules(ctx context.Context, rules []engine.Rule, qtys []int64, each []engine.Decision, blocked bool) error {
	if !blocked {
		_, err := s.opts.Decider.DecideAll(ctx, rules, qtys, each)
		return err
	}
	if _, err := s.opts.Decider.DecideAll(ctx, rules, make([]int64, len(rules)), each); err != nil {
		return err
	}
	for i := range each {
		each[i].Limited = qtys[i] > 0 && each[i].Remaining < qtys[i]
	}
	return nil
}

// boundedQuantity is q, or for a GCRA rule one more than its bucket holds
// when q is larger: such a hit is refused whatever its size, with the same
// answer, and the engine's product of the emission interval by a larger
// quantity could wrap around (as redis-cell's does, which CL.THROTTLE
// keeps) and admit it.
func boundedQuantity(r engine.Rule, q int64) int64 {
	if r.Family == engine.FamilyCL && q > r.GCRA.MaxBurst+1 {
		return r.GCRA.MaxBurst + 2
	}
	return q
}

// blockedDecision is the decision for a limit that Blocks: over for any
// hit (a hits_addend of 0 only checks, and is not over), nothing left,
// and, since nothing is ever admitted, a reset one window away.
func blockedDecision(qty int64, l *Limit) engine.Decision {
	return engine.Decision{Limited: qty > 0, RetryAfter: -1, ResetAfter: ruleWindow(l.Rule).Nanoseconds()}
}

// ruleWindow is the period of r's quota.
func ruleWindow(r engine.Rule) time.Duration {
	if r.Family == engine.FamilyCL {
		return time.Duration(r.GCRA.Period) * time.Second
	}
	return time.Duration(r.Window.Window)
}

// ceilSeconds is d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// hitsAddend is descriptor i's quantity: its own hits_addend when set (0
// checks without counting), else the request's when not 0, else 1.
func hitsAddend(req *rlsv3.RateLimitRequest, i int) int64 {
	if h := req.Descriptors[i].HitsAddend; h != nil {
		return int64(h.Value)
	}
	if req.HitsAddend > 0 {
		return int64(req.HitsAddend)
	}
	return 1
}

// applyReplaces drops the limits that another matched limit of the same
// request replaces, as envoyproxy/ratelimit's constructLimitsToCheck does:
// every matched limit's replaces, an unlimited one's too, name limits to
// drop; a limit is dropped when it has a name, is not unlimited, and a
// matched limit replaces its name. A dropped limit's descriptor answers OK
// without a limit.
func applyReplaces(slots []slot) {
	replaced := map[string]bool{}
	for _, sl := range slots {
		if sl.limit != nil {
			for _, name := range sl.limit.Replaces {
				replaced[name] = true
			}
		}
	}
	if len(replaced) == 0 {
		return
	}
	for i := range slots {
		if l := slots[i].limit; l != nil && !l.Unlimited && l.Name != "" && replaced[l.Name] {
			slots[i].limit = nil
		}
	}
}

// validate refuses what no configuration can match sensibly, before any
// work: the bounds above, empty keys, NUL bytes and invalid UTF-8 (which
// protobuf's decoder refuses already; JSON or a proto2 peer may not).
func validate(req *rlsv3.RateLimitRequest) error {
	switch {
	case req.Domain == "":
		return invalidf("rate limit domain must not be empty")
	case len(req.Domain) > MaxDomainLen:
		return invalidf("rate limit domain is longer than %d bytes", MaxDomainLen)
	case !cleanString(req.Domain):
		return invalidf("rate limit domain must be valid UTF-8 without NUL bytes")
	case len(req.Descriptors) == 0:
		return invalidf("rate limit descriptor list must not be empty")
	case len(req.Descriptors) > MaxDescriptors:
		return invalidf("%d descriptors: at most %d per request", len(req.Descriptors), MaxDescriptors)
	}
	for i, d := range req.Descriptors {
		switch {
		case d == nil || len(d.Entries) == 0:
			return invalidf("descriptor %d has no entries", i)
		case len(d.Entries) > MaxEntries:
			return invalidf("descriptor %d has %d entries: at most %d", i, len(d.Entries), MaxEntries)
		case d.HitsAddend != nil && d.HitsAddend.Value > MaxHitsAddend:
			return invalidf("descriptor %d: hits_addend %d is over %d", i, d.HitsAddend.Value, uint64(MaxHitsAddend))
		}
		for j, e := range d.Entries {
			switch {
			case e == nil || e.Key == "":
				return invalidf("descriptor %d entry %d has an empty key", i, j)
			case len(e.Key) > MaxEntryLen:
				return invalidf("descriptor %d entry %d's key is longer than %d bytes", i, j, MaxEntryLen)
			case len(e.Value) > MaxValueLen:
				return invalidf("descriptor %d entry %d's value is longer than %d bytes", i, j, MaxValueLen)
			case !cleanString(e.Key) || !cleanString(e.Value):
				return invalidf("descriptor %d entry %d must be valid UTF-8 without NUL bytes", i, j)
			}
		}
	}
	return nil
}

func cleanString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return false
		}
	}
	return utf8.ValidString(s)
}
