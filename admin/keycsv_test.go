package admin

import (
	"slices"
	"strings"
	"testing"

	"tollgate/plans"
)

func TestParseKeyCSV(t *testing.T) {
	const k1, k2, k3 = "apikey1234abcdefghij0123456789", "Second0key0value0of0thirty0chars", "ThirdKeyValue0123456789"
	body := "\ufeffEnabled,Name,key,UsageplanIds,Colour\n" +
		"true,MyFirstApiKey," + k1 + ",\"c7y23b,glvrsr\",red\n" +
		"FALSE,second," + k2 + ",'c7y23b,glvrsr'\n" +
		",third," + k3 + ",\n" +
		"true,short,tooShort,\n" +
		"true,," + k1 + ",\n" +
		"maybe,bad," + k1 + ",\n" +
		"true,typo,tg" + strings.Repeat("a", 42) + ",\n"
	keys, warnings, err := parseKeyCSV([]byte(body), nil, plans.KeyFormat{})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 {
		t.Fatalf("got %d keys %+v, want 3", len(keys), keys)
	}
	want := []plans.KeyImport{
		{Line: 2, Name: "MyFirstApiKey", Enabled: true, Hash: plans.HashKey(k1, nil), PlanIDs: []string{"c7y23b", "glvrsr"}},
		{Line: 3, Name: "second", Enabled: false, Hash: plans.HashKey(k2, nil), PlanIDs: []string{"c7y23b", "glvrsr"}},
		{Line: 4, Name: "third", Enabled: true, Hash: plans.HashKey(k3, nil)},
	}
	for i, w := range want {
		g := keys[i]
		if g.Line != w.Line || g.Name != w.Name || g.Enabled != w.Enabled || g.Hash != w.Hash || !slices.Equal(g.PlanIDs, w.PlanIDs) {
			t.Errorf("key %d: got %+v, want %+v", i, g, w)
		}
	}
	if len(warnings) != 4 || !strings.HasPrefix(warnings[0], "line 5:") || !strings.Contains(warnings[1], "name") ||
		!strings.Contains(warnings[2], "Enabled") || !strings.Contains(warnings[3], "checksum") {
		t.Errorf("warnings: got %q, want lines 5, 6 (name), 7 (Enabled) and 8 (checksum)", warnings)
	}
	for name, bad := range map[string]string{
		"empty":        "",
		"no name":      "key,description\n" + k1 + ",x\n",
		"bad quoting":  "key,name\n\"" + k1 + ",x\n",
		"only a value": k1 + "\n",
	} {
		if _, _, err := parseKeyCSV([]byte(bad), nil, plans.KeyFormat{}); plans.ErrorKind(err) != plans.KindInvalid {
			t.Errorf("%s: got %v, want a 400", name, err)
		}
	}
}
