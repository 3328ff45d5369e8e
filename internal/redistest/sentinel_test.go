package redistest

import "testing"

// The sentinel backend's clients reach the primary of the test's own
// topology: what one writes the other reads, on the primary itself.
func TestSentinelBackendClientsShareTheTestsPrimary(t *testing.T) {
	t.Parallel()
	c, prefix := SentinelBackend.Open(t)
	d := SentinelBackend.Dial(t)
	if err := c.Set(t.Context(), prefix+":k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := d.Get(t.Context(), prefix+":k").Result(); err != nil || got != "v" {
		t.Fatalf("the other client read %q, %v; want v", got, err)
	}
	s, _ := sentinels.Load(t)
	if got, err := s.(*Sentinel).Primary.Client.Get(t.Context(), prefix+":k").Result(); err != nil || got != "v" {
		t.Fatalf("the primary has %q, %v; want v", got, err)
	}
}
