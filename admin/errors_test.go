package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"tollgate/plans"
)

func TestWriteError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		err         error
		wantStatus  int
		wantType    string
		wantMessage string
		wantRetry   bool
		wantLogged  bool
	}{
		{"invalid names its field", plans.Invalid("quota.limit", "must be at least 0"), 400, "BadRequestException", "quota.limit: must be at least 0", false, false},
		{"invalid already naming its field", plans.Invalid("name", "name is required"), 400, "BadRequestException", "name is required", false, false},
		{"not found", plans.NotFound("Invalid API identifier specified"), 404, "NotFoundException", "Invalid API identifier specified", false, false},
		{"conflict", fmt.Errorf("wrapped: %w", plans.Conflict("Stage already exists")), 409, "ConflictException", "Stage already exists", false, false},
		{"limit exceeded", &plans.Error{Kind: plans.KindLimitExceeded, Message: "slow down"}, 429, "TooManyRequestsException", "slow down", true, false},
		{"unavailable", plans.Unavailable(errors.New("dial tcp: refused"), "database unavailable"), 503, "ServiceUnavailableException", "database unavailable", true, true},
		{"a bug", errors.New("nil map write in handler"), 500, "InternalServerErrorException", "Internal server error", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
			w := httptest.NewRecorder()
			s.writeError(w, httptest.NewRequest(http.MethodGet, "/restapis", nil), tc.err)
			var body struct{ Message string }
			if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
				t.Fatalf("got body %q, want JSON: %v", w.Body, err)
			}
			if w.Code != tc.wantStatus || w.Header().Get("x-amzn-ErrorType") != tc.wantType || body.Message != tc.wantMessage {
				t.Fatalf("got %d %s %q, want %d %s %q", w.Code, w.Header().Get("x-amzn-ErrorType"), body.Message, tc.wantStatus, tc.wantType, tc.wantMessage)
			}
			if got := w.Header().Get("Retry-After") != ""; got != tc.wantRetry {
				t.Fatalf("got Retry-After present %v, want %v", got, tc.wantRetry)
			}
			if got := logs.Len() > 0; got != tc.wantLogged {
				t.Fatalf("got logged %v (%q), want %v", got, logs.String(), tc.wantLogged)
			}
			if strings.Contains(body.Message, "refused") || strings.Contains(body.Message, "nil map") {
				t.Fatalf("got message %q, want the cause hidden", body.Message)
			}
		})
	}
}

func TestErrorTableCoversEveryKind(t *testing.T) {
	t.Parallel()
	for k := plans.KindInternal; k <= plans.KindUnavailable; k++ {
		if _, ok := errorTable[k]; !ok {
			t.Errorf("got no row for kind %v, want one", k)
		}
	}
}
