package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Element is one node of the page, found by role and accessible name.
type Element struct {
	p       *Page
	backend cdp.BackendNodeID
	what    string // "button \"Sign in\"", for messages
}

// axText returns an accessibility value as a string ("" when absent).
func axText(v *accessibility.Value) string {
	if v == nil {
		return ""
	}
	var s string
	if err := json.Unmarshal([]byte(v.Value), &s); err != nil {
		return strings.Trim(string(v.Value), `"`)
	}
	return s
}

// query returns the exposed (not ignored) accessibility nodes with role
// and the exact accessible name; an empty role or name matches any.
func (p *Page) query(ctx context.Context, role, name string) ([]*accessibility.Node, error) {
	doc, err := chromedp.Run(ctx, chromedp.Evaluate[*runtime.RemoteObject]("document"))
	if err != nil {
		return nil, err
	}
	defer chromedp.Call(ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: doc.ObjectID})
	res, err := chromedp.Call(ctx, accessibility.QueryAXTree, accessibility.QueryAXTreeParams{
		ObjectID: doc.ObjectID, Role: role, AccessibleName: name})
	if err != nil {
		return nil, err
	}
	var out []*accessibility.Node
	for _, n := range res.Nodes {
		if !n.Ignored && n.BackendDOMNodeID != 0 {
			out = append(out, n)
		}
	}
	return out, nil
}

// find returns the one exposed node with role and exact name, or an
// error that says how many there are.
func (p *Page) find(ctx context.Context, role, name string) (*Element, error) {
	what := fmt.Sprintf("%s %q", role, name)
	nodes, err := p.query(ctx, role, name)
	if err != nil {
		return nil, err
	}
	if len(nodes) != 1 {
		return nil, fmt.Errorf("%s: found %d, want 1", what, len(nodes))
	}
	return &Element{p: p, backend: nodes[0].BackendDOMNodeID, what: what}, nil
}

// Role waits for the one element with role and exact accessible name
// ("button", "Sign in"; "link", "Usage plans"; "textbox", "Name").
func (p *Page) Role(role, name string) *Element {
	p.tb.Helper()
	var el *Element
	p.Eventually(fmt.Sprintf("find %s %q", role, name), func() error {
		var err error
		el, err = p.find(p.ctx, role, name)
		return err
	})
	return el
}

// Label waits for the one form control (input, select or textarea)
// labelled name, as getByLabel finds it.
func (p *Page) Label(name string) *Element {
	p.tb.Helper()
	var el *Element
	p.Eventually(fmt.Sprintf("find the control labelled %q", name), func() error {
		nodes, err := p.query(p.ctx, "", name)
		if err != nil {
			return err
		}
		var controls []*Element
		for _, n := range nodes {
			d, err := chromedp.Call(p.ctx, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: n.BackendDOMNodeID})
			if err == nil && isControl(d.Node.NodeName) {
				controls = append(controls, &Element{p: p, backend: n.BackendDOMNodeID, what: fmt.Sprintf("control %q", name)})
			}
		}
		if len(controls) != 1 {
			return fmt.Errorf("found %d controls labelled %q, want 1", len(controls), name)
		}
		el = controls[0]
		return nil
	})
	return el
}

func isControl(nodeName string) bool {
	switch strings.ToLower(nodeName) {
	case "input", "select", "textarea":
		return true
	}
	return false
}
