package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/apigateway"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

const (
	benchAccessKey = "AKIDTOLLGATEBENCH"
	benchSecretKey = "tollgate-bench-secret"
)

// stack is the running bench: addresses of every process and the clients
// the bench drives them with.
type stack struct {
	opts                          options
	dir                           string
	procs                         *procs
	rdb                           *redis.Client
	redisAddr                     string
	upstream, proxy, naive, admin string
	gateways                      []string
	metrics                       string // gateway0's /metrics address
	adminToken                    string // the admin's bearer token (rules have no SDK call)
	sdk                           *apigateway.Client
	fix                           fixture
	// the cluster rows (-cluster): a client per cluster node, the gateway
	// on the cluster, its /metrics address and the naive peer on it
	crdbs                                        []*redis.Client
	clusterGateway, clusterMetrics, clusterNaive string
}

// run starts the stack, measures and writes the report to out.
func run(ctx context.Context, opts options, out io.Writer) error {
	dir, err := os.MkdirTemp("", "tollgate-bench-")
	if err != nil {
		return err
	}
	if opts.keep {
		fmt.Fprintf(out, "process logs in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	s := &stack{opts: opts, dir: dir, procs: &procs{dir: dir}}
	defer s.procs.stop()
	dbURL, drop, err := createDatabase(ctx, opts.postgresURL)
	if err != nil {
		return err
	}
	defer drop()
	if err := s.start(ctx, dbURL); err != nil {
		return fmt.Errorf("%w (process logs: rerun with -keep)", err)
	}
	defer s.rdb.Close()
	defer func() {
		for _, c := range s.crdbs {
			_ = c.Close()
		}
	}()
	rep, err := s.measure(ctx)
	if err != nil {
		return err
	}
	rep.print(out)
	if opts.pprof != "" {
		fmt.Fprintf(out, "\nCPU profiles of gateway0 at %d connections in %s (go tool pprof -top %s <file>)\n",
			opts.conns[0], opts.pprof, filepath.Join(opts.bin, "tollgate"))
	}
	return nil
}

// start runs redis-server, the upstream, the bare proxy, the admin and two
// gateway nodes, configures the bench API, and then runs the naive peer
// with the bench's keys.
func (s *stack) start(ctx context.Context, dbURL string) error {
	redisAddr, err := s.startRedis(ctx)
	if err != nil {
		return err
	}
	s.redisAddr = redisAddr
	bare := filepath.Join(s.opts.bin, "bareproxy")
	if s.upstream, err = s.startHTTP(ctx, "upstream", bare, []string{"-fixed"}, ""); err != nil {
		return err
	}
	if s.proxy, err = s.startHTTP(ctx, "proxy", bare, []string{"-upstream", "http://" + s.upstream}, ""); err != nil {
		return err
	}
	s.adminToken = randomValue(32)
	env := []string{
		"TOLLGATE_DATABASE_URL=" + dbURL, "TOLLGATE_REDIS_URL=redis://" + redisAddr + "/0",
		"TOLLGATE_REDIS_PREFIX=tgbench", "TOLLGATE_ADMIN_ACCESS_KEY_ID=" + benchAccessKey,
		"TOLLGATE_ADMIN_SECRET_ACCESS_KEY=" + benchSecretKey, "TOLLGATE_ADMIN_TOKEN=" + s.adminToken,
		"TOLLGATE_ACCOUNT_RATE_LIMIT=" + itoa(accountRate), "TOLLGATE_ACCOUNT_BURST_LIMIT=" + itoa(accountRate),
		"TOLLGATE_METRICS_ADDR=127.0.0.1:0", "TOLLGATE_LOG_LEVEL=" + s.opts.logLevel, "TOLLGATE_LOG_FORMAT=json",
		"TOLLGATE_GATEWAY_TLS_ADDR=127.0.0.1:0", // two gateways on one host: not both on :8443
		// A decision that fails admits without limits (fail open) and so
		// skips the work being measured; the report's fail-open column
		// counts them. The default is production's 50 ms.
		"TOLLGATE_REDIS_TIMEOUT=" + s.opts.redisTimeout.String(),
	}
	if s.opts.pprof != "" {
		env = append(env, "TOLLGATE_PPROF=true")
	}
	tollgate := filepath.Join(s.opts.bin, "tollgate")
	if s.admin, err = s.startTollgate(ctx, "admin", tollgate, env); err != nil {
		return err
	}
	for i := range 2 {
		metrics, err := freeAddr()
		if err != nil {
			return err
		}
		g, err := s.startTollgate(ctx, "gateway"+strconv.Itoa(i), tollgate, append(env, "TOLLGATE_METRICS_ADDR="+metrics))
		if err != nil {
			return err
		}
		s.gateways = append(s.gateways, g)
		if i == 0 {
			s.metrics = metrics
		}
	}
	s.sdk = apigateway.New(apigateway.Options{
		BaseEndpoint: aws.String("http://" + s.admin), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider(benchAccessKey, benchSecretKey, ""),
	})
	if s.fix, err = setup(ctx, s.sdk, s.admin, s.adminToken, "http://"+s.upstream); err != nil {
		return err
	}
	if s.naive, err = s.startHTTP(ctx, "naive", filepath.Join(s.opts.bin, "naiveproxy"), naiveArgs(s.upstream, redisAddr, s.fix), s.fix.mainKey); err != nil {
		return err
	}
	if s.opts.cluster {
		if err := s.startClusterSide(ctx, env); err != nil {
			return err
		}
	}
	return s.warm(ctx)
}

// naiveArgs are the naive peer's flags: the bench's keys and limits (the
// plan bucket, the method throttle of GET /uncached, the account bucket,
// the quota).
func naiveArgs(upstream, redisAddr string, f fixture) []string {
	keys := append([]string{f.mainKey}, f.manyKeys...)
	return []string{"-upstream", "http://" + upstream, "-redis", redisAddr, "-keys", strings.Join(keys, ","),
		"-plan-rate", itoa(planRate), "-plan-burst", itoa(planBurst), "-stage-rate", itoa(methodRate), "-stage-burst", itoa(methodBurst),
		"-account-rate", itoa(accountRate), "-account-burst", itoa(accountRate), "-quota", itoa(quotaLimit)}
}

// startRedis runs the bench's own redis-server (no persistence,
// noeviction as docs/operations.md ("Redis") requires of the limiter Redis).
func (s *stack) startRedis(ctx context.Context) (string, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	if err := s.procs.start("redis", s.opts.redisServer, nil, "--port", portOf(addr), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--maxmemory-policy", "noeviction"); err != nil {
		return "", err
	}
	if err := waitTCP(ctx, addr); err != nil {
		return "", err
	}
	s.rdb = redis.NewClient(&redis.Options{Addr: addr})
	return addr, s.rdb.Ping(ctx).Err()
}

// startHTTP runs an HTTP process with -addr set to a free address and
// waits until it answers 200 on "/ready" with key as x-api-key ("" for
// none: the upstream, and the proxy in front of it, answer 200 on every
// path).
func (s *stack) startHTTP(ctx context.Context, label, bin string, args []string, key string) (string, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	if err := s.procs.start(label, bin, nil, append(args, "-addr", addr)...); err != nil {
		return "", err
	}
	return addr, waitHTTP(ctx, "http://"+addr+"/ready", "", key)
}

// startTollgate runs `tollgate serve` in the role its label names (an
// admin for "admin..." labels, else a gateway), and waits for its /readyz.
func (s *stack) startTollgate(ctx context.Context, label, bin string, env []string) (string, error) {
	addr, err := freeAddr()
	if err != nil {
		return "", err
	}
	role := "gateway"
	if strings.HasPrefix(label, "admin") {
		role = "admin"
		env = append(env, "TOLLGATE_ADMIN_ADDR="+addr)
	} else {
		env = append(env, "TOLLGATE_GATEWAY_ADDR="+addr)
	}
	if err := s.procs.start(label, bin, append(env, "TOLLGATE_ROLE="+role), "serve"); err != nil {
		return "", err
	}
	return addr, waitHTTP(ctx, "http://"+addr+"/readyz", "", "")
}

// warm waits until both gateways serve the main key, uses up the over-limit
// key's quota (one request) and checks that it is refused.
func (s *stack) warm(ctx context.Context) error {
	main := s.fix
	main.probeKey = main.mainKey
	if _, err := waitEnforced(ctx, s.gateways, main, http.StatusOK, time.Now()); err != nil {
		return fmt.Errorf("gateways do not serve the bench API: %w", err)
	}
	over := s.fix
	over.probeKey = over.overKey
	_, _ = probe(ctx, s.gateways[0], over)
	if st, err := probe(ctx, s.gateways[0], over); err != nil || st != http.StatusTooManyRequests {
		return fmt.Errorf("over-limit key: got %d (%v), want 429", st, err)
	}
	return nil
}

// createDatabase creates tollgate_bench_<pid> next to the maintenance
// database at adminURL and returns its URL and a function that drops it.
func createDatabase(ctx context.Context, adminURL string) (string, func(), error) {
	cfg, err := pgx.ParseConfig(adminURL)
	if err != nil {
		return "", nil, fmt.Errorf("postgres url: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", nil, fmt.Errorf("postgres: %w", err)
	}
	name := fmt.Sprintf("tollgate_bench_%d", os.Getpid())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		_ = conn.Close(ctx)
		return "", nil, fmt.Errorf("create database: %w", err)
	}
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		_ = conn.Close(ctx)
	}
	u := url.URL{Scheme: "postgres", User: url.User(cfg.User), Host: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))),
		Path: "/" + name, RawQuery: "sslmode=disable"}
	if cfg.Password != "" {
		u.User = url.UserPassword(cfg.User, cfg.Password)
	}
	return u.String(), drop, nil
}
