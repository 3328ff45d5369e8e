package admin

import (
	"context"
	"sync"
	"time"

	"tollgate/plans"
	"tollgate/seal"
)

// CredentialStore keeps the admin credentials beyond the bootstrap ones
// (plans/postgres.DB). Secrets are stored as plans.CredentialSecret: a
// token's hash, a SigV4 secret sealed with the secrets key (credentialContext).
type CredentialStore interface {
	CreateCredential(ctx context.Context, c *plans.Credential, secret plans.CredentialSecret) error
	ListCredentials(ctx context.Context, p Page) ([]plans.Credential, string, error)
	GetCredential(ctx context.Context, id string) (*plans.Credential, error)
	RotateCredential(ctx context.Context, id string, secret plans.CredentialSecret) (*plans.Credential, error)
	DeleteCredential(ctx context.Context, id string) error
	CredentialByToken(ctx context.Context, tokenHash string) (*plans.Credential, error)
	CredentialByAccessKey(ctx context.Context, accessKeyID string) (*plans.Credential, string, error)
}

// credentialTTL is how long a node trusts what it looked up of a stored
// credential (found or not): a credential deleted or rotated on another
// admin node is refused here at most this long after (docs/operations.md
// promises 5 s).
const credentialTTL = time.Second

// maxCachedCredentials bounds the cache; past it, it starts over.
const maxCachedCredentials = 10000

// credentialCache looks stored credentials up, remembering each answer
// for credentialTTL so that a busy client costs one query a second.
type credentialCache struct {
	store CredentialStore
	box   *seal.Key // nil: secrets stored as given
	log   interface{ Error(string, ...any) }

	mu      sync.Mutex
	entries map[string]cachedCredential
}

type cachedCredential struct {
	cred    *plans.Credential // nil: no such credential
	secret  string            // the SigV4 secret, opened
	expires time.Time
}

func newCredentialCache(store CredentialStore, box *seal.Key, log interface{ Error(string, ...any) }) *credentialCache {
	return &credentialCache{store: store, box: box, log: log, entries: map[string]cachedCredential{}}
}

// byToken returns the credential of a bearer token. Errors: errBadToken
// when none has it; KindUnavailable when the store does not answer.
func (c *credentialCache) byToken(ctx context.Context, token string) (*plans.Credential, error) {
	e, err := c.lookup(ctx, "t:"+plans.HashToken(token), func() (cachedCredential, error) {
		cred, err := c.store.CredentialByToken(ctx, plans.HashToken(token))
		return cachedCredential{cred: cred}, err
	})
	return e.cred, err
}

// byAccessKey returns the credential of a SigV4 access key id and its
// secret. Errors as byToken.
func (c *credentialCache) byAccessKey(ctx context.Context, akid string) (*plans.Credential, string, error) {
	e, err := c.lookup(ctx, "a:"+akid, func() (cachedCredential, error) {
		cred, sealed, err := c.store.CredentialByAccessKey(ctx, akid)
		if err != nil {
			return cachedCredential{}, err
		}
		secret, err := c.box.Open(sealed, credentialContext(akid))
		if err != nil {
			c.log.Error("admin: a stored SigV4 secret cannot be opened; the credential is refused", "credential", cred.Name, "err", err)
			return cachedCredential{}, nil
		}
		return cachedCredential{cred: cred, secret: string(secret)}, nil
	})
	return e.cred, e.secret, err
}

func (c *credentialCache) lookup(ctx context.Context, key string, load func() (cachedCredential, error)) (cachedCredential, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if !ok || now.After(e.expires) {
		var err error
		e, err = load()
		switch {
		case plans.ErrorKind(err) == plans.KindNotFound:
			e = cachedCredential{}
		case err != nil:
			return cachedCredential{}, err
		}
		e.expires = now.Add(credentialTTL)
		c.mu.Lock()
		if len(c.entries) >= maxCachedCredentials {
			clear(c.entries)
		}
		c.entries[key] = e
		c.mu.Unlock()
	}
	if e.cred == nil {
		return e, errBadToken
	}
	return e, nil
}

// forget drops everything cached, after this node changed a credential.
func (c *credentialCache) forget() {
	c.mu.Lock()
	clear(c.entries)
	c.mu.Unlock()
}

// credentialContext binds a sealed SigV4 secret to its access key id
// (package seal), so a sealed secret copied to another row does not open.
func credentialContext(accessKeyID string) string { return "admin credential " + accessKeyID }
