package layering

import (
	"bytes"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const (
	module  = "tollgate"
	goRedis = "github.com/redis/go-redis/v9"
)

// graph is the import graph of the module's packages (tests excluded),
// as `go list -deps` prints it: direct imports by package, and which
// packages are the standard library's.
type graph struct {
	imports  map[string][]string
	standard map[string]bool
}

// loadGraph runs `go list -deps` over the whole module.
func loadGraph(t *testing.T) *graph {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}|{{.Standard}}|{{join .Imports ","}}`, module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	g := &graph{imports: map[string][]string{}, standard: map[string]bool{}}
	for line := range strings.Lines(string(out)) {
		parts := strings.Split(strings.TrimSpace(line), "|")
		if len(parts) != 3 {
			continue
		}
		g.standard[parts[0]] = parts[1] == "true"
		if parts[2] != "" {
			g.imports[parts[0]] = strings.Split(parts[2], ",")
		}
	}
	return g
}

// deps returns every package pkg depends on, directly or not.
func (g *graph) deps(pkg string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, d := range g.imports[p] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(pkg)
	return seen
}

// ours returns the module's packages under prefix (the package itself and
// its subpackages).
func (g *graph) ours(prefix string) []string {
	var out []string
	for p := range g.standard {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// importers returns the module's packages that import pkg directly.
func (g *graph) importers(pkg string) []string {
	var out []string
	for p, imps := range g.imports {
		if strings.HasPrefix(p, module) && slices.Contains(imps, pkg) {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// dependsOn reports whether pkg depends on dep or on a package under it.
func (g *graph) dependsOn(pkg, dep string) bool {
	for d := range g.deps(pkg) {
		if d == dep || strings.HasPrefix(d, dep+"/") {
			return true
		}
	}
	return false
}

func TestGatewayDoesNotDependOnRedis(t *testing.T) {
	g := loadGraph(t)
	for _, p := range g.ours(module + "/gateway") {
		if g.dependsOn(p, goRedis) {
			t.Errorf("%s depends on %s: the gateway reaches Redis only through its Engine port", p, goRedis)
		}
	}
}

// The domain and the vocabularies the adapters share are pure: standard
// library only, and one another (and, for limit, cache and the limiter
// script's library, nothing of Redis either).
func TestPurePackagesUseOnlyTheStandardLibrary(t *testing.T) {
	g := loadGraph(t)
	pure := []string{module + "/plans", module + "/keyspace", module + "/limit", module + "/cache", module + "/seal",
		module + "/script", module + "/calendar"}
	for _, p := range pure {
		for d := range g.deps(p) {
			if !g.standard[d] && d != "C" && !slices.Contains(pure, d) { // "C": cgo, which the standard library's net uses
				t.Errorf("%s depends on %s, want the standard library only", p, d)
			}
		}
	}
}

// The HTTP edges (admin API, gateway, developer portal) never import each
// other: they meet at plans (the store's methods, the snapshot) and the
// push protocol, and cmd wires them.
func TestEdgesNeverImportEachOther(t *testing.T) {
	g := loadGraph(t)
	for _, pair := range [][2]string{{"admin", "gateway"}, {"gateway", "admin"},
		{"portal", "admin"}, {"admin", "portal"}, {"portal", "gateway"}, {"gateway", "portal"}} {
		for _, p := range g.ours(module + "/" + pair[0]) {
			if g.dependsOn(p, module+"/"+pair[1]) {
				t.Errorf("%s depends on %s/%s: the edges meet only at plans and the push protocol", p, module, pair[1])
			}
		}
	}
}

// The limiter layers stack on the engine through the limit.Decider port
// alone: they hold no Redis client, name no key and never reach up into
// the engine (docs/architecture.md).
func TestLimiterLayersDependOnThePortAlone(t *testing.T) {
	g := loadGraph(t)
	for _, layer := range []string{"refusal", "lease", "failopen"} {
		p := module + "/engine/" + layer
		for d := range g.deps(p) {
			if strings.HasPrefix(d, module) && d != module+"/limit" && d != module+"/plans" && d != module+"/calendar" {
				t.Errorf("%s depends on %s, want only limit (and plans' change events, and calendar, limit's periods)", p, d)
			}
			if d == goRedis {
				t.Errorf("%s depends on %s", p, goRedis)
			}
		}
	}
}

// adapters own a driver each (pgx, go-redis, an HTTP client) and never
// depend on one another: only cmd sees all of them. The engine is a
// gateway node's Redis, usage the admin's side of the same Redis, webhook
// the receivers of webhooks.
var adapters = []string{module + "/plans/postgres", module + "/engine", module + "/push", module + "/usage", module + "/webhook"}

func TestAdaptersNeverImportEachOther(t *testing.T) {
	g := loadGraph(t)
	for _, a := range adapters {
		for _, b := range adapters {
			if a != b && g.dependsOn(a, b) {
				t.Errorf("adapter %s depends on adapter %s", a, b)
			}
		}
	}
	for _, a := range adapters {
		for _, web := range []string{module + "/admin", module + "/gateway"} {
			if g.dependsOn(a, web) {
				t.Errorf("adapter %s depends on %s", a, web)
			}
		}
	}
}

// Redis key names come from package keyspace only, and only the adapters
// that do Redis I/O of tollgate's own keys import it: the engine (a node's
// data plane), usage (the admin's side of usage) and push (the config push
// protocol). Nothing else can build a name from it; a name spelled by hand
// elsewhere would also need go-redis, which only these packages and the
// wiring import.
func TestOnlyTheEngineUsageAndPushNameRedisKeys(t *testing.T) {
	g := loadGraph(t)
	want := []string{module + "/engine", module + "/push", module + "/usage"}
	if got := g.importers(module + "/keyspace"); !slices.Equal(got, want) {
		t.Errorf("importers of keyspace: got %v, want %v", got, want)
	}
	allowed := map[string]bool{
		module + "/engine": true, module + "/push": true, module + "/usage": true, // Redis I/O
		module + "/internal/redisurl": true, module + "/internal/redisscript": true, module + "/internal/redistest": true,
		// a test usage source behind the ledger's UsageSource port, on keys
		// of its own: the production source belongs in the engine
		module + "/ledger/ledgertest": true,
	}
	for _, p := range g.importers(goRedis) {
		if !allowed[p] && !strings.HasPrefix(p, module+"/cmd/") { // commands wire clients and run their own servers
			t.Errorf("%s imports %s: Redis I/O belongs in the engine or push", p, goRedis)
		}
	}
}
