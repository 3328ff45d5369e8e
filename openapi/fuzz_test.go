package openapi

import (
	"os"
	"testing"

	"tollgate/openapi/openapitest"
	"tollgate/plans"
)

// FuzzImport feeds arbitrary documents to Import: it never panics, every
// refusal is a 400 naming a location, and whatever it accepts survives an
// export in each format and a second import unchanged.
func FuzzImport(f *testing.F) {
	if doc, err := os.ReadFile("testdata/petstore-aws.yaml"); err == nil {
		f.Add(doc)
	}
	for _, seed := range []string{
		`{"openapi":"3.0.1","info":{"title":"t","version":"1"},"paths":{"/a/{b}":{"get":{"responses":{"200":{"description":"x"}},"x-amazon-apigateway-integration":{"type":"mock"}}}}}`,
		`{"swagger":"2.0","info":{"title":"t","version":"1"},"paths":{"/a":{"x-amazon-apigateway-any-method":{"responses":{"200":{"description":"x"}}}}}}`,
		"openapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths: {/: {options: {responses: {'204': {description: x}}}}}\n",
		`{"openapi":"3.0.1","info":{"title":"t","version":"1"},"paths":{},"x-amazon-apigateway-gateway-responses":{"DEFAULT_5XX":{"statusCode":503}}}`,
		rulesDoc,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		def, _, err := Import(doc, ImportOptions{})
		if err != nil {
			if plans.ErrorKind(err) != plans.KindInvalid {
				t.Fatalf("Import(%q): got %v, want a 400", doc, err)
			}
			return
		}
		for _, opts := range []ExportOptions{{Extensions: true}, {Extensions: true, Swagger: true, YAML: true}} {
			out, _, err := Export(def, opts)
			if err != nil {
				t.Fatalf("Export(%+v) of an imported document: %v", opts, err)
			}
			again, _, err := Import(out, ImportOptions{})
			if err != nil {
				t.Fatalf("re-import of %+v export: %v\n%s", opts, err, out)
			}
			if openapitest.Normal(again) != openapitest.Normal(def) {
				t.Fatalf("round trip (%+v) changed the API:\n got %s\nwant %s", opts, openapitest.Normal(again), openapitest.Normal(def))
			}
		}
	})
}
