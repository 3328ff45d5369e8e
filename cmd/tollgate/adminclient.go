package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// adminFlags are the flags of commands that call the admin API.
type adminFlags struct {
	AdminURL string `name:"admin-url" help:"Admin API base URL. Credentials: TOLLGATE_ADMIN_TOKEN (bearer), else AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (SigV4; region AWS_REGION, default us-east-1)." default:"http://127.0.0.1:8001" env:"TOLLGATE_ADMIN_URL"`
}

// adminClient calls the admin API with a bearer token or SigV4.
type adminClient struct {
	base   string
	token  string
	creds  aws.Credentials
	region string
	http   *http.Client
}

// client returns an adminClient for the flags and the environment's
// credentials (getenv: os.Getenv); an error names what is missing.
func (f adminFlags) client(getenv func(string) string) (*adminClient, error) {
	c := &adminClient{base: strings.TrimRight(f.AdminURL, "/"), http: &http.Client{Timeout: 5 * time.Minute}}
	tok, err := secret(getenv, "TOLLGATE_ADMIN_TOKEN")
	if err != nil {
		return nil, err
	}
	if c.token = tok; tok != "" {
		return c, nil
	}
	akid, sec := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if akid == "" || sec == "" {
		return nil, fmt.Errorf("no admin credentials: set TOLLGATE_ADMIN_TOKEN, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	}
	c.creds = aws.Credentials{AccessKeyID: akid, SecretAccessKey: sec, SessionToken: getenv("AWS_SESSION_TOKEN")}
	c.region = getenv("AWS_REGION")
	if c.region == "" {
		c.region = getenv("AWS_DEFAULT_REGION")
	}
	if c.region == "" {
		c.region = "us-east-1"
	}
	return c, nil
}

// apiError is a non-2xx answer of the admin API.
type apiError struct {
	Status  int
	Type    string
	Message string
}

func (e *apiError) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("%s (HTTP %d): %s", e.Type, e.Status, e.Message)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
}

// do sends one request and returns the answer's body; a non-2xx answer is
// an *apiError.
func (c *adminClient) do(ctx context.Context, method, path, contentType string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	if err := c.sign(ctx, req, body); err != nil {
		return nil, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		var m struct{ Message string }
		_ = json.Unmarshal(b, &m)
		if m.Message == "" {
			m.Message = strings.TrimSpace(string(b))
		}
		return nil, &apiError{Status: resp.StatusCode, Type: resp.Header.Get("x-amzn-ErrorType"), Message: m.Message}
	}
	return b, nil
}

// doJSON sends in (when not nil) as JSON and decodes the answer into out
// (when not nil).
func (c *adminClient) doJSON(ctx context.Context, method, path string, in, out any) error {
	var body []byte
	ct := ""
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
		ct = "application/json"
	}
	b, err := c.do(ctx, method, path, ct, body)
	if err != nil || out == nil {
		return err
	}
	return json.Unmarshal(b, out)
}

func (c *adminClient) sign(ctx context.Context, req *http.Request, body []byte) error {
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
		return nil
	}
	sum := sha256.Sum256(body)
	return v4.NewSigner().SignHTTP(ctx, c.creds, req, hex.EncodeToString(sum[:]), "apigateway", c.region, time.Now())
}

// printJSON writes v indented to standard output.
func printJSON(v any) error {
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
