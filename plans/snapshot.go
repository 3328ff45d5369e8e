package plans

import "fmt"

// Snapshot is the whole configuration the gateway runs on, at one config
// Version: the account throttle, every API's stages with the resources of
// the deployment each stage points to, every usage plan, and the custom
// domain names with their certificates and mappings. It holds no
// API keys (they are looked up one by one, see KeyRecord). The admin builds
// it from PostgreSQL and publishes it as JSON; a gateway node validates it,
// compiles it and swaps it in whole.
type Snapshot struct {
	Version int64                 `json:"version"`
	Account Throttle              `json:"account"`
	Apis    map[string]*ApiConfig `json:"apis"`
	Plans   map[string]*UsagePlan `json:"plans"`
	// Domains are the custom domain names by name (lower case).
	Domains map[string]*DomainConfig `json:"domains,omitempty"`
}

// ApiConfig is one RestApi as the gateway sees it: its stages by name.
type ApiConfig struct {
	ID           string                  `json:"id"`
	ApiKeySource string                  `json:"apiKeySource"`
	Stages       map[string]*StageConfig `json:"stages"`
}

// StageConfig is a stage with the resources (methods and integrations
// included) and the gateway responses (by type) of the deployment it
// points to, and the stage's rate-limit rules (by name).
type StageConfig struct {
	Stage            Stage                      `json:"stage"`
	Resources        []Resource                 `json:"resources"`
	GatewayResponses map[string]GatewayResponse `json:"gatewayResponses,omitempty"`
	RateLimitRules   []StageRule                `json:"rateLimitRules,omitempty"`
}

// Validate checks what the gateway relies on: every API and stage is named
// consistently, every stage has a resource tree rooted at "/", and every
// plan and account throttle is valid. A snapshot that fails is not used.
func (s *Snapshot) Validate() error {
	if err := s.Account.Validate("account"); err != nil {
		return err
	}
	for id, api := range s.Apis {
		if api == nil || api.ID != id {
			return fmt.Errorf("snapshot: api %q: id mismatch", id)
		}
		for name, st := range api.Stages {
			if st == nil || st.Stage.StageName != name {
				return fmt.Errorf("snapshot: api %s stage %q: name mismatch", id, name)
			}
			if err := validateTree(st.Resources); err != nil {
				return fmt.Errorf("snapshot: api %s stage %s: %w", id, name, err)
			}
			if err := validateStageRules(st.RateLimitRules); err != nil {
				return fmt.Errorf("snapshot: api %s stage %s: %w", id, name, err)
			}
		}
	}
	for id, p := range s.Plans {
		if p == nil || p.ID != id {
			return fmt.Errorf("snapshot: plan %q: id mismatch", id)
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("snapshot: plan %s: %w", id, err)
		}
	}
	for name, d := range s.Domains {
		if d == nil || d.DomainName != name {
			return fmt.Errorf("snapshot: domain %q: name mismatch", name)
		}
		if err := d.Validate(); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
	}
	return nil
}

// validateStageRules checks each rule and that names and counter ids are
// unique within the stage.
func validateStageRules(rules []StageRule) error {
	names, counters := map[string]bool{}, map[string]bool{}
	for i := range rules {
		r := rules[i].RateLimitRule
		if err := r.Validate(); err != nil {
			return fmt.Errorf("rate-limit rule %q: %w", r.Name, err)
		}
		c := rules[i].CounterID
		if names[r.Name] || c == "" || counters[c] {
			return fmt.Errorf("rate-limit rule %q: duplicate name or missing or duplicate counter id", r.Name)
		}
		names[r.Name], counters[c] = true, true
	}
	return nil
}

// Normalize normalises every plan of s (UsagePlan.Normalize). push.Reader
// calls it on each snapshot it decodes, before Validate.
func (s *Snapshot) Normalize() {
	for _, p := range s.Plans {
		if p != nil {
			p.Normalize()
		}
	}
}

func validateTree(rs []Resource) error {
	byID := make(map[string]*Resource, len(rs))
	root := 0
	for i := range rs {
		byID[rs[i].ID] = &rs[i]
		if rs[i].Path == "/" {
			root++
		}
	}
	if root != 1 {
		return fmt.Errorf("want exactly one root resource, got %d", root)
	}
	for _, r := range rs {
		if r.Path == "/" {
			continue
		}
		parent, ok := byID[r.ParentID]
		if !ok {
			return fmt.Errorf("resource %s: parent %s missing", r.ID, r.ParentID)
		}
		if JoinPath(parent.Path, r.PathPart) != r.Path {
			return fmt.Errorf("resource %s: path %q does not follow its parent", r.ID, r.Path)
		}
	}
	return nil
}

// Change is one committed admin write, as recorded in PostgreSQL's change
// log (one row per config version) and announced on the change stream:
// whether the Snapshot changed, the hashes of the API keys whose records
// changed, and the plans and stages ("apiId:stage") touched.
type Change struct {
	Version   int64    `json:"version"`
	Snapshot  bool     `json:"snapshot,omitempty"`
	KeyHashes []string `json:"keyHashes,omitempty"`
	Plans     []string `json:"plans,omitempty"`
	Stages    []string `json:"stages,omitempty"`
}
