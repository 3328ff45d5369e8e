package plans

import (
	"encoding/json"
	"time"
)

// EventQuotaThreshold is the type of the webhook sent once when a key's
// quota (or a customer's) crosses one of its plan's alert thresholds in a
// period (docs/usage.md, "Alerts").
const EventQuotaThreshold = "quota.threshold"

// Alert scopes: whose quota crossed the threshold.
const (
	AlertScopeKey      = "key"
	AlertScopeCustomer = "customer"
)

// QuotaAlert is one threshold crossed: in plan PlanID, by key KeyID's
// quota (scope key) or customer CustomerID's (scope customer; a key
// without a customer is its own, KeyID set and CustomerID empty), in the
// period [PeriodStart, PeriodEnd), when Used of Limit units were used
// (Used*100 ≥ Threshold*Limit). ID is its webhook's id. Delivery is the
// state of that webhook (GET /alerts).
type QuotaAlert struct {
	ID          string        `json:"id"`
	PlanID      string        `json:"planId"`
	Scope       string        `json:"scope"`
	KeyID       string        `json:"keyId,omitempty"`
	CustomerID  string        `json:"customerId,omitempty"`
	Threshold   int32         `json:"threshold"`
	Used        int64         `json:"used"`
	Limit       int64         `json:"limit"`
	PeriodStart time.Time     `json:"periodStart"`
	PeriodEnd   time.Time     `json:"periodEnd"`
	CrossedAt   time.Time     `json:"time"`
	Delivery    AlertDelivery `json:"delivery"`
}

// AlertDelivery is the state of an alert's webhook: "delivered",
// "pending" (not yet tried, or retrying after LastError) or "dropped"
// (no longer in the outbox undelivered: retried for 30 days, or never
// sent because no node had TOLLGATE_WEBHOOK_URL then).
type AlertDelivery struct {
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	LastError   string     `json:"lastError,omitempty"`
	DeliveredAt *time.Time `json:"deliveredAt,omitempty"`
}

// Alert delivery states.
const (
	AlertDelivered = "delivered"
	AlertPending   = "pending"
	AlertDropped   = "dropped"
)

// Crossed reports whether used units of limit reach threshold percent.
func Crossed(used, limit int64, threshold int32) bool {
	return used > 0 && used*100 >= int64(threshold)*limit
}

// quotaThreshold is the body of an EventQuotaThreshold webhook. Numbers
// are JSON numbers, times RFC 3339 UTC; customerId is null for a key
// without one (and keyId for a customer's alert).
type quotaThreshold struct {
	ID          string  `json:"id"`
	Type        string  `json:"type"`
	Time        string  `json:"time"`
	PlanID      string  `json:"planId"`
	KeyID       *string `json:"keyId"`
	CustomerID  *string `json:"customerId"`
	Threshold   int32   `json:"threshold"`
	Used        int64   `json:"used"`
	Limit       int64   `json:"limit"`
	PeriodStart string  `json:"periodStart"`
	PeriodEnd   string  `json:"periodEnd"`
}

// Webhook returns the webhook announcing a.
func (a *QuotaAlert) Webhook() Webhook {
	ev := quotaThreshold{ID: a.ID, Type: EventQuotaThreshold, Time: a.CrossedAt.UTC().Format(time.RFC3339),
		PlanID: a.PlanID, Threshold: a.Threshold, Used: a.Used, Limit: a.Limit,
		PeriodStart: a.PeriodStart.UTC().Format(time.RFC3339), PeriodEnd: a.PeriodEnd.UTC().Format(time.RFC3339)}
	if a.KeyID != "" {
		ev.KeyID = &a.KeyID
	}
	if a.CustomerID != "" {
		ev.CustomerID = &a.CustomerID
	}
	body, _ := json.Marshal(ev) // strings and numbers only: cannot fail
	return Webhook{ID: a.ID, Type: ev.Type, Body: body}
}

// AlertQuery selects alerts, newest first: of plan PlanID, key KeyID and
// customer CustomerID when set, at most Limit, after the cursor Position
// (from a previous page).
type AlertQuery struct {
	PlanID, KeyID, CustomerID string
	Limit                     int
	Position                  string
}
