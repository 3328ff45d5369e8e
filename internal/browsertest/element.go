package browsertest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// call runs the JavaScript function fn with this bound to the element and
// args as its arguments, and decodes its JSON result into out (when not
// nil).
func (e *Element) call(fn string, out any, args ...any) {
	e.p.tb.Helper()
	ctx, cancel := context.WithTimeout(e.p.ctx, Wait)
	defer cancel()
	obj, err := chromedp.Call(ctx, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: e.backend})
	if err != nil {
		e.p.tb.Fatalf("%s: resolve: %v", e.what, err)
	}
	defer chromedp.Call(ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: obj.Object.ObjectID})
	// The arguments travel as one array: the protocol leaves out an
	// argument whose JSON is empty, such as "", which would arrive undefined.
	params := runtime.CallFunctionOnParams{ObjectID: obj.Object.ObjectID, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
		FunctionDeclaration: `function (args) { return (` + fn + `).apply(this, args || []); }`}
	if len(args) > 0 {
		b, _ := json.Marshal(args)
		params.Arguments = []*runtime.CallArgument{{Value: b}}
	}
	res, err := chromedp.Call(ctx, runtime.CallFunctionOn, params)
	if err == nil && res.ExceptionDetails != nil {
		err = &chromedp.ExceptionError{ExceptionDetails: res.ExceptionDetails}
	}
	if err != nil {
		e.p.tb.Fatalf("%s: %v", e.what, err)
	}
	if out != nil && len(res.Result.Value) > 0 {
		if err := json.Unmarshal(res.Result.Value, out); err != nil {
			e.p.tb.Fatalf("%s: decode %s: %v", e.what, res.Result.Value, err)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Click scrolls the element into view and clicks the middle of it with
// the mouse, as a person would (a control under a modal dialog gets no
// click).
func (e *Element) Click() {
	e.p.tb.Helper()
	ctx, cancel := context.WithTimeout(e.p.ctx, Wait)
	defer cancel()
	_, err := chromedp.Call(ctx, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: e.backend})
	if err != nil {
		e.p.tb.Fatalf("%s: scroll into view: %v", e.what, err)
	}
	box, err := chromedp.Call(ctx, dom.GetBoxModel, dom.GetBoxModelParams{BackendNodeID: e.backend})
	if err != nil {
		e.p.tb.Fatalf("%s: box: %v", e.what, err)
	}
	q := box.Model.Content
	x, y := (q[0]+q[2]+q[4]+q[6])/4, (q[1]+q[3]+q[5]+q[7])/4
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(x, y)); err != nil {
		e.p.tb.Fatalf("%s: click: %v", e.what, err)
	}
}

// Fill focuses the control and sets its value, firing input and change
// events as typing then leaving the field would.
func (e *Element) Fill(value string) {
	e.p.tb.Helper()
	e.call(`function (v) { this.focus(); this.value = v;
		this.dispatchEvent(new Event("input", {bubbles: true}));
		this.dispatchEvent(new Event("change", {bubbles: true})); }`, nil, value)
}

// Select picks the option whose text is text in a <select>.
func (e *Element) Select(text string) {
	e.p.tb.Helper()
	e.call(`function (t) { const o = [...this.options].find((o) => o.text === t);
		if (!o) throw new Error("no option " + JSON.stringify(t) + " in " + JSON.stringify([...this.options].map((o) => o.text)));
		this.focus(); this.value = o.value; this.dispatchEvent(new Event("change", {bubbles: true})); }`, nil, text)
}

// Value returns the control's value.
func (e *Element) Value() string {
	e.p.tb.Helper()
	var v string
	e.call(`function () { return this.value; }`, &v)
	return v
}

// Text returns the element's rendered text (innerText).
func (e *Element) Text() string {
	e.p.tb.Helper()
	var v string
	e.call(`function () { return this.innerText; }`, &v)
	return v
}

// Focus moves the keyboard focus to the element.
func (e *Element) Focus() {
	e.p.tb.Helper()
	ctx, cancel := context.WithTimeout(e.p.ctx, Wait)
	defer cancel()
	if _, err := chromedp.Call(ctx, dom.Focus, dom.FocusParams{BackendNodeID: e.backend}); err != nil {
		e.p.tb.Fatalf("%s: focus: %v", e.what, err)
	}
}

// Press sends key events (runes or chromedp/kb keys such as kb.Tab and
// kb.Enter) to the focused element.
func (p *Page) Press(keys string) {
	p.tb.Helper()
	p.Do(fmt.Sprintf("press %q", keys), chromedp.KeyEvent(keys))
}

// Focused returns the role and accessible name of the focused element.
func (p *Page) Focused() (role, name string) {
	p.tb.Helper()
	ctx, cancel := context.WithTimeout(p.ctx, Wait)
	defer cancel()
	obj, err := chromedp.Run(ctx, chromedp.Evaluate[*runtime.RemoteObject]("document.activeElement"))
	if err != nil {
		p.tb.Fatalf("focused element: %v", err)
	}
	defer chromedp.Call(ctx, runtime.ReleaseObject, runtime.ReleaseObjectParams{ObjectID: obj.ObjectID})
	tree, err := chromedp.Call(ctx, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{ObjectID: obj.ObjectID, FetchRelatives: ptr(false)})
	if err != nil || len(tree.Nodes) == 0 {
		p.tb.Fatalf("focused element: accessibility node: %v", err)
	}
	return axText(tree.Nodes[0].Role), axText(tree.Nodes[0].Name)
}

// Rows returns the text of every cell of a <table>, row by row, the
// header row first.
func (e *Element) Rows() [][]string {
	e.p.tb.Helper()
	var rows [][]string
	e.call(`function () { return [...this.rows].map((r) => [...r.cells].map((c) => c.innerText.trim())); }`, &rows)
	return rows
}

// Table returns the rows of the table whose caption (its accessible name)
// is caption, once it has at least one row besides its header.
func (p *Page) Table(caption string) [][]string {
	p.tb.Helper()
	var rows [][]string
	p.Eventually(fmt.Sprintf("table %q has rows", caption), func() error {
		el, err := p.find(p.ctx, "table", caption)
		if err != nil {
			return err
		}
		if rows = el.Rows(); len(rows) < 2 {
			return fmt.Errorf("%d rows", len(rows))
		}
		return nil
	})
	return rows
}
