package openapi

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"tollgate/openapi/openapitest"
	"tollgate/plans"
)

// exportForms are the four documents GetExport writes with extensions.
var exportForms = []ExportOptions{
	{Extensions: true, Stage: "prod"},
	{Extensions: true, Stage: "prod", YAML: true},
	{Extensions: true, Stage: "prod", Swagger: true},
	{Extensions: true, Stage: "prod", Swagger: true, YAML: true},
}

// Any API, exported in each form and imported again, is the same API:
// exactly in OpenAPI 3; in Swagger 2.0 up to what the export warns it
// cannot carry (different models per media type), and nothing else.
func TestExportImportRoundTripProperty(t *testing.T) {
	seeds := 30 // each is four round trips of a document of tens of KB
	if testing.Short() {
		seeds = 10
	}
	for seed := range seeds {
		def := openapitest.Definition(rand.New(rand.NewPCG(uint64(seed), 25)))
		for _, opts := range exportForms {
			if msg := roundTrip(def, opts); msg != "" {
				t.Fatalf("seed %d, %+v: %s", seed, opts, msg)
			}
		}
	}
}

// roundTrip exports def with opts and imports the export; it describes
// the first way the result is not what it must be ("" when it is).
func roundTrip(def *plans.ApiDefinition, opts ExportOptions) string {
	out, warnings, err := Export(def, opts)
	if err != nil {
		return fmt.Sprintf("Export: %v", err)
	}
	again, _, err := Import(out, ImportOptions{})
	if err != nil {
		return fmt.Sprintf("Import: %v\n%s", err, out)
	}
	want, lossy := openapitest.DeclarePathParameters(def), []string(nil)
	if opts.Swagger {
		want, lossy = openapitest.SwaggerForm(want)
	}
	var at []string
	for _, w := range warnings {
		at = append(at, strings.SplitN(w, ": ", 2)[0])
	}
	if !slices.Equal(at, lossy) {
		return fmt.Sprintf("export warnings %q, want %q", warnings, lossy)
	}
	if got, want := openapitest.Normal(again), openapitest.Normal(want); got != want {
		return fmt.Sprintf("import(export(api)) differs:\n got %s\nwant %s\n%s", got, want, out)
	}
	return ""
}
