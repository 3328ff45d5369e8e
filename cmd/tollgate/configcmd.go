package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"tollgate/config"
)

// configCmd groups `tollgate config`: the whole configuration as a file,
// through the admin API (docs/config.md).
type configCmd struct {
	Dump  configDumpCmd  `cmd:"" help:"Write the whole configuration as YAML (never key values); the same state gives the same bytes."`
	Plan  configPlanCmd  `cmd:"" help:"Show what apply would change. Exit 0: no change, 2: changes, 1: error."`
	Apply configApplyCmd `cmd:"" help:"Make the stored configuration what FILE says, in one transaction (all or nothing)."`
}

type configDumpCmd struct {
	adminFlags
	Output string `short:"o" type:"path" help:"File to write (written whole or not at all), or a directory (an existing one, or a path ending in /) to write one file per API plus usage-plans.yaml, api-keys.yaml, domain-names.yaml and account.yaml; default standard output."`
}

func (c *configDumpCmd) Run(ctx context.Context) error {
	cl, err := c.client(os.Getenv)
	if err != nil {
		return err
	}
	b, err := cl.do(ctx, "GET", "/config", "", nil)
	if err != nil {
		return err
	}
	d, err := config.Parse(b)
	if err != nil {
		return err
	}
	if c.Output != "" && (strings.HasSuffix(c.Output, "/") || isDir(c.Output)) {
		return writeDir(c.Output, d)
	}
	y, err := config.YAML(d)
	if err != nil {
		return err
	}
	if c.Output == "" {
		_, err = os.Stdout.Write(y)
		return err
	}
	return writeFileWhole(c.Output, func(w io.Writer) error { _, err := w.Write(y); return err })
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// writeDir writes d as one file per API (apis/<name>.yaml) and one each
// for usage plans, API keys and the account.
func writeDir(dir string, d *config.Document) error {
	if err := os.MkdirAll(filepath.Join(dir, "apis"), 0o755); err != nil {
		return err
	}
	files := map[string]*config.Document{
		"usage-plans.yaml":  {UsagePlans: d.UsagePlans},
		"api-keys.yaml":     {ApiKeys: d.ApiKeys},
		"domain-names.yaml": {DomainNames: d.DomainNames},
		"account.yaml":      {Account: d.Account},
	}
	for _, a := range d.Apis {
		name := unsafeName.ReplaceAllString(a.Name, "-")
		if a.ID != "" {
			name += "-" + a.ID
		}
		files[filepath.Join("apis", name+".yaml")] = &config.Document{Apis: []config.Api{a}}
	}
	for name, part := range files {
		y, err := config.YAML(part)
		if err != nil {
			return err
		}
		if err := writeFileWhole(filepath.Join(dir, name), func(w io.Writer) error { _, err := w.Write(y); return err }); err != nil {
			return err
		}
	}
	return nil
}

// readDocument reads a file, or every .yaml, .yml and .json file under a
// directory merged into one document.
func readDocument(path string) (*config.Document, error) {
	if !isDir(path) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		return config.Parse(b)
	}
	var names []string
	err := filepath.WalkDir(path, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(p)) {
			names = append(names, p)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	out := &config.Document{}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		d, err := config.Parse(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if d.Account != nil {
			if out.Account != nil {
				return nil, fmt.Errorf("%s: the account is set in two files", n)
			}
			out.Account = d.Account
		}
		out.Apis = append(out.Apis, d.Apis...)
		out.UsagePlans = append(out.UsagePlans, d.UsagePlans...)
		out.ApiKeys = append(out.ApiKeys, d.ApiKeys...)
		out.DomainNames = append(out.DomainNames, d.DomainNames...)
	}
	return out, nil
}

type configPlanCmd struct {
	adminFlags
	Prune bool   `help:"Also list what apply --prune would delete: everything stored that FILE lacks."`
	File  string `arg:"" type:"path" help:"Configuration file (YAML or JSON) or directory of files."`
}

// exitCode is an error that sets the process's exit code without a
// message (config plan: 2 when there are changes).
type exitCode int

func (e exitCode) Error() string { return fmt.Sprintf("exit %d", int(e)) }

func (c *configPlanCmd) Run(ctx context.Context) error {
	res, err := sendConfig(ctx, c.adminFlags, "plan", c.Prune, c.File)
	if err != nil {
		return err
	}
	printChanges(os.Stdout, res.Changes, false)
	if len(res.Changes) > 0 {
		return exitCode(2)
	}
	return nil
}

type configApplyCmd struct {
	adminFlags
	Prune bool   `help:"Also delete everything stored that FILE lacks (a failed or partial read of the stored state deletes nothing)."`
	File  string `arg:"" type:"path" help:"Configuration file (YAML or JSON) or directory of files."`
}

func (c *configApplyCmd) Run(ctx context.Context) error {
	res, err := sendConfig(ctx, c.adminFlags, "apply", c.Prune, c.File)
	if err != nil {
		return err
	}
	printChanges(os.Stdout, res.Changes, true)
	for _, k := range res.CreatedKeys {
		fmt.Printf("API key %s (%s) created; its value, shown this once: %s\n", k.Name, k.ID, k.Value)
	}
	return nil
}

// configResult is the admin API's answer to plan and apply.
type configResult struct {
	Changes     []config.Change     `json:"changes"`
	Applied     bool                `json:"applied"`
	CreatedKeys []config.CreatedKey `json:"createdKeys"`
}

func sendConfig(ctx context.Context, f adminFlags, what string, prune bool, file string) (*configResult, error) {
	d, err := readDocument(file)
	if err != nil {
		return nil, err
	}
	cl, err := f.client(os.Getenv)
	if err != nil {
		return nil, err
	}
	body, err := config.JSON(d)
	if err != nil {
		return nil, err
	}
	path := "/config/" + what
	if prune {
		path += "?prune=true"
	}
	b, err := cl.do(ctx, "POST", path, "application/json", body)
	if err != nil {
		return nil, err
	}
	var res configResult
	return &res, json.Unmarshal(b, &res)
}

// printChanges writes one line per change (+ create, ~ update, - delete),
// each changed field with its stored and wanted values, and a summary.
func printChanges(w io.Writer, changes []config.Change, applied bool) {
	n := map[string]int{}
	for _, c := range changes {
		sign := map[string]string{config.Create: "+", config.Update: "~", config.Delete: "-"}[c.Action]
		id := ""
		if c.ID != "" {
			id = " (" + c.ID + ")"
		}
		fmt.Fprintf(w, "%s %s %s %s%s\n", sign, c.Action, c.Kind, c.Name, id)
		for _, name := range slices.Sorted(mapKeys(c.Fields)) {
			f := c.Fields[name]
			fmt.Fprintf(w, "    %s: %s -> %s\n", name, short(f.Stored), short(f.Wanted))
		}
		n[c.Action]++
	}
	verb := "Plan"
	if applied {
		verb = "Applied"
	}
	if len(changes) == 0 {
		fmt.Fprintln(w, "No changes: the stored configuration matches.")
		return
	}
	fmt.Fprintf(w, "%s: %d to create, %d to update, %d to delete.\n", verb, n[config.Create], n[config.Update], n[config.Delete])
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// short cuts a long JSON value (an API definition) for the terminal.
func short(b json.RawMessage) string {
	s := string(b)
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
