package plans

import (
	"encoding/json"
	"time"
)

// Webhook is one event to deliver (package webhook): its id (the same on
// every try, so receivers can drop repeats), type and body as sent, and how
// many tries it had.
type Webhook struct {
	ID       string
	Type     string
	Body     []byte
	Attempts int
}

// EventKeyExpiring is the type of the webhook sent a configured time
// before an API key's expiry (docs/behaviour.md, "Key lifecycle").
const EventKeyExpiring = "key.expiring"

// KeyExpiring is the body of an EventKeyExpiring webhook. Times are
// RFC 3339 UTC; customerId is null for a key without one.
type KeyExpiring struct {
	ID         string  `json:"id"`
	Type       string  `json:"type"`
	Time       string  `json:"time"`
	KeyID      string  `json:"keyId"`
	Name       string  `json:"name"`
	CustomerID *string `json:"customerId"`
	ExpiresAt  string  `json:"expiresAt"`
}

// NewKeyExpiring returns the webhook announcing that key keyID (name,
// customerID, "" for none) expires at expiresAt, made at now.
func NewKeyExpiring(now time.Time, keyID, name, customerID string, expiresAt time.Time) Webhook {
	ev := KeyExpiring{ID: "ev" + NewID(20), Type: EventKeyExpiring, Time: now.UTC().Format(time.RFC3339),
		KeyID: keyID, Name: name, ExpiresAt: expiresAt.UTC().Format(time.RFC3339Nano)}
	if customerID != "" {
		ev.CustomerID = &customerID
	}
	body, _ := json.Marshal(ev) // strings only: cannot fail
	return Webhook{ID: ev.ID, Type: ev.Type, Body: body}
}
