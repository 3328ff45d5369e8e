package plans

import (
	"slices"
	"strings"
	"testing"
)

func TestParseTemplateFindsContextAndStageVariables(t *testing.T) {
	cases := []struct {
		template string
		vars     []string
	}{
		{`{"message":$context.error.messageString}`, []string{"context.error.messageString"}},
		{`{"stage":"${context.stage}","env":"$stageVariables.env"}`, []string{"context.stage", "stageVariables.env"}},
		{`in $context.stage.`, []string{"context.stage"}},
		{`$context.identity.sourceIp/$context.resourcePath`, []string{"context.identity.sourceIp", "context.resourcePath"}},
		{`$contextual $context. ${context.stage $input.params('x') $ 100`, nil},
		{`$$context.requestId`, []string{"context.requestId"}},
	}
	for _, tc := range cases {
		parts := ParseTemplate(tc.template)
		var vars []string
		var whole strings.Builder
		for _, p := range parts {
			whole.WriteString(p.Text)
			if p.Var != "" {
				vars = append(vars, p.Var)
			}
		}
		if !slices.Equal(vars, tc.vars) || whole.String() != tc.template {
			t.Errorf("%q: got variables %q and text %q, want %q and the template", tc.template, vars, whole.String(), tc.vars)
		}
	}
}

func TestUnknownTemplateVariablesNameWhatIsServedAsWritten(t *testing.T) {
	tmpl := `{"a":"$context.stage","b":"$context.authorizer.claims.sub","c":"$context.error.message","d":"$stageVariables.x","e":"$context.authorizer.claims.sub"}`
	if got := UnknownTemplateVariables(tmpl, true); !slices.Equal(got, []string{"context.authorizer.claims.sub"}) {
		t.Errorf("gateway response: got %q", got)
	}
	if got := UnknownTemplateVariables(tmpl, false); !slices.Equal(got, []string{"context.authorizer.claims.sub", "context.error.message"}) {
		t.Errorf("MOCK response: got %q", got)
	}
	if got := TemplateDirectives(`#set($o = $input.params("Origin")) $o`); !slices.Equal(got, []string{"#set", "$input."}) {
		t.Errorf("directives: got %q", got)
	}
}

// FuzzParseTemplate: the parts of any template put back together are the
// template, and each variable part reads back as itself.
func FuzzParseTemplate(f *testing.F) {
	for _, seed := range []string{`{"m":$context.error.messageString}`, "${stageVariables.a.b}", "$context.", "${context.x", "$$", ""} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var whole strings.Builder
		for _, p := range ParseTemplate(s) {
			whole.WriteString(p.Text)
			if p.Var == "" {
				continue
			}
			again := ParseTemplate(p.Text)
			if len(again) != 1 || again[0] != p {
				t.Fatalf("%q: part %+v reads back as %+v", s, p, again)
			}
		}
		if whole.String() != s {
			t.Fatalf("%q: parts make %q", s, whole.String())
		}
	})
}
