package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retries (docs/protocol.md, "Remote providers"). Both APIs ask clients to come back
// after a rate limit (429) or an overload (503, 529, Anthropic's overloaded_error),
// and a connection can fail before the server said anything. Such a call is tried
// again, at most the entry's max_retries times, but only while nothing has streamed:
// once a delta reached the caller, a second attempt would repeat it. This is the one
// retry policy: the Anthropic SDK's own is switched off (newAnthropic) and go-openai
// has none.

// Backoff between attempts: retryBase doubled after each attempt up to retryBackoffMax,
// the upper half of it random, unless the server said how long to wait
// (Retry-After), which is honoured up to RetryAfterMax.
const (
	retryBase       = 500 * time.Millisecond
	retryBackoffMax = 8 * time.Second
	RetryAfterMax   = 30 * time.Second
)

// withRetries runs call, which makes one attempt and streams through the emit it is
// given, until it succeeds, fails for good, or ctx ends. A cancel during a wait ends
// it at once with ctx's error.
func (r *remote) withRetries(ctx context.Context, emit func(Delta), call func(emit func(Delta)) (Result, error)) (Result, error) {
	for attempt := 0; ; attempt++ {
		streamed := false
		res, err := call(func(d Delta) {
			streamed = true
			emit(d)
		})
		if err == nil || streamed || ctx.Err() != nil {
			return res, err
		}
		wait, ok := r.retryAfter(err, attempt)
		if !ok {
			return res, err
		}
		if attempt == r.retries {
			return res, gaveUp(err, attempt+1)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return Result{}, ctx.Err()
		case <-timer.C:
		}
	}
}

// retryAfter says whether err is worth another attempt and how long to wait before
// it, the attempt that failed counting from 0.
func (r *remote) retryAfter(err error, attempt int) (time.Duration, bool) {
	var pe *Error
	if !errors.As(err, &pe) {
		return 0, false
	}
	switch pe.Status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable, statusOverloaded:
	case 0:
		if !pe.connection {
			return 0, false
		}
	default:
		return 0, false
	}
	var se *statusError
	if errors.As(err, &se) {
		if d, ok := parseRetryAfter(se.retryAfter, time.Now()); ok {
			return min(d, RetryAfterMax), true
		}
	}
	d := min(retryBase<<min(attempt, 10), retryBackoffMax)
	return d/2 + r.jitter(d/2), true
}

// statusOverloaded is Anthropic's "overloaded" status.
const statusOverloaded = 529

// parseRetryAfter reads a Retry-After value: delay seconds, or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs < 0 || secs != secs {
			return 0, false
		}
		if secs > RetryAfterMax.Seconds() {
			return RetryAfterMax, true
		}
		return time.Duration(secs * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// gaveUp notes on the final error how many attempts were made.
func gaveUp(err error, attempts int) error {
	var pe *Error
	if attempts < 2 || !errors.As(err, &pe) {
		return err
	}
	e := *pe
	e.Message = fmt.Sprintf("%s (%d attempts)", e.Message, attempts)
	return &e
}
