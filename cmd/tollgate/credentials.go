package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"text/tabwriter"
)

// credentialsCmd groups `tollgate credentials`: the admin API's
// /credentials (docs/operations.md, "Admin credentials and roles").
type credentialsCmd struct {
	Create credentialCreateCmd `cmd:"" help:"Create an admin credential; prints its secret, shown this once."`
	List   credentialListCmd   `cmd:"" help:"List admin credentials (no secrets)."`
	Rotate credentialRotateCmd `cmd:"" help:"Replace a credential's secret; prints the new one. The old one is refused within 5 s."`
	Revoke credentialRevokeCmd `cmd:"" help:"Delete a credential; every admin node refuses it within 5 s."`
}

type credentialCreateCmd struct {
	adminFlags
	Name string `arg:"" help:"Name of the credential (the actor in the audit log)."`
	Role string `required:"" enum:"admin,operator,keys,viewer" help:"admin, operator, keys or viewer."`
	Kind string `default:"token" enum:"token,sigv4" help:"token (bearer) or sigv4 (an access key pair)."`
}

func (c *credentialCreateCmd) Run(ctx context.Context) error {
	cl, err := c.client(os.Getenv)
	if err != nil {
		return err
	}
	var out map[string]any
	if err := cl.doJSON(ctx, "POST", "/credentials", map[string]string{"name": c.Name, "role": c.Role, "kind": c.Kind}, &out); err != nil {
		return err
	}
	return printJSON(out)
}

type credentialListCmd struct {
	adminFlags
}

func (c *credentialListCmd) Run(ctx context.Context) error {
	cl, err := c.client(os.Getenv)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tNAME\tROLE\tKIND\tACCESS KEY ID")
	position := ""
	for {
		var page struct {
			Item []struct {
				ID, Name, Role, Kind, AccessKeyID string
			}
			Position string
		}
		path := "/credentials?limit=500"
		if position != "" {
			path += "&position=" + url.QueryEscape(position)
		}
		if err := cl.doJSON(ctx, "GET", path, nil, &page); err != nil {
			return err
		}
		for _, it := range page.Item {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", it.ID, it.Name, it.Role, it.Kind, it.AccessKeyID)
		}
		if position = page.Position; position == "" {
			return w.Flush()
		}
	}
}

type credentialRotateCmd struct {
	adminFlags
	ID string `arg:"" help:"Credential id."`
}

func (c *credentialRotateCmd) Run(ctx context.Context) error {
	cl, err := c.client(os.Getenv)
	if err != nil {
		return err
	}
	var out map[string]any
	if err := cl.doJSON(ctx, "POST", "/credentials/"+url.PathEscape(c.ID)+"/rotate", nil, &out); err != nil {
		return err
	}
	return printJSON(out)
}

type credentialRevokeCmd struct {
	adminFlags
	ID string `arg:"" help:"Credential id."`
}

func (c *credentialRevokeCmd) Run(ctx context.Context) error {
	cl, err := c.client(os.Getenv)
	if err != nil {
		return err
	}
	if err := cl.doJSON(ctx, "DELETE", "/credentials/"+url.PathEscape(c.ID), nil, nil); err != nil {
		return err
	}
	fmt.Println("revoked", c.ID)
	return nil
}
