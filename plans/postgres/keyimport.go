package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"tollgate/plans"
)

// ImportApiKeys stores keys in one transaction of five statements whatever
// their count, bounded by the statement timeout plus importRowBudget per
// row. Rows are taken in file order, each whole or
// not at all: a row the store refuses (an unknown usage plan, a key that
// would be in two plans covering one stage, a name too long to index) is
// reported as a warning naming its line, or, with failOnWarnings, fails
// the whole import (nothing is stored). A key whose hash exists (in the
// database or on an earlier row) is updated, its last row winning, and
// joins the listed plans. IDs lists every imported key once, in the order
// of its first stored row. One change names every imported key's hash.
// Errors: KindInvalid (failOnWarnings and a refused row, naming its line),
// KindConflict (a concurrent change claimed a stage for one of the keys),
// KindUnavailable.
func (db *DB) ImportApiKeys(ctx context.Context, keys []plans.KeyImport, failOnWarnings bool) (*plans.KeyImportResult, error) {
	var res *plans.KeyImportResult
	bound := db.timeout + time.Duration(len(keys))*importRowBudget
	err := db.writeBulk(ctx, bound, func(ctx context.Context, tx pgx.Tx, now time.Time) error {
		st, err := loadImportState(ctx, tx, keys)
		if err != nil {
			return err
		}
		imp := st.resolve(keys)
		if failOnWarnings && len(imp.warnings) > 0 {
			return plans.Invalid("body", "%s (failonwarnings: nothing was imported)", imp.warnings[0])
		}
		res = &plans.KeyImportResult{IDs: []string{}, Warnings: imp.warnings}
		if len(imp.keys) == 0 {
			return nil
		}
		if res.IDs, err = storeImport(ctx, tx, now, imp); err != nil {
			return err
		}
		hashes := make([]string, len(imp.keys))
		for i, k := range imp.keys {
			hashes[i] = k.hash
		}
		return record(ctx, tx, now, &change{keys: hashes})
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// importRowBudget is what each row of an import adds to the statement
// timeout that bounds it: 50,000 rows get 50 s more (they take about N s
// on an idle 2-core machine; a loaded one must not fail them).
const importRowBudget = time.Millisecond

// importState is what an import checks its rows against, read in two
// queries: the stages ("api:stage") of every usage plan the rows name
// (a plan absent from plans does not exist) and, for every key the rows
// name that exists, its id and its stage claims (stage → plan id).
type importState struct {
	plans  map[string][]string
	ids    map[string]string
	claims map[string]map[string]string
}

// loadImportState reads the importState of keys. The plans are locked
// (FOR NO KEY UPDATE, as the claim triggers of migrations/000001 lock
// them) and so are the existing keys (FOR UPDATE, as CreateUsagePlanKey),
// so no concurrent write changes what the rows are checked against.
func loadImportState(ctx context.Context, tx pgx.Tx, keys []plans.KeyImport) (*importState, error) {
	var hashes, planIDs []string
	for _, k := range keys {
		hashes, planIDs = append(hashes, k.Hash), append(planIDs, k.PlanIDs...)
	}
	st := &importState{plans: map[string][]string{}, ids: map[string]string{}, claims: map[string]map[string]string{}}
	rows, _ := tx.Query(ctx, `SELECT p.id, s.api_id, s.stage FROM usage_plans p
		LEFT JOIN usage_plan_stages s ON s.plan_id = p.id
		WHERE p.id = ANY($1) ORDER BY p.id FOR NO KEY UPDATE OF p`, set(planIDs))
	var planID string
	var api, stage *string
	if _, err := pgx.ForEachRow(rows, []any{&planID, &api, &stage}, func() error {
		st.plans[planID] = append(st.plans[planID], stageRefOf(api, stage)...)
		return nil
	}); err != nil {
		return nil, err
	}
	rows, _ = tx.Query(ctx, `SELECT a.key_hash, a.id, c.api_id, c.stage, c.plan_id FROM api_keys a
		LEFT JOIN key_stage_claims c ON c.key_id = a.id
		WHERE a.key_hash = ANY($1) ORDER BY a.id FOR UPDATE OF a`, set(hashes))
	var hash, id string
	var claimPlan *string
	_, err := pgx.ForEachRow(rows, []any{&hash, &id, &api, &stage, &claimPlan}, func() error {
		st.ids[hash] = id
		if claimPlan != nil {
			st.claim(hash, stageRef(*api, *stage), *claimPlan)
		}
		return nil
	})
	return st, err
}

// stageRefOf is the stage reference of a nullable (api, stage) pair of an
// outer join: none when the pair is NULL.
func stageRefOf(api, stage *string) []string {
	if api == nil || stage == nil {
		return nil
	}
	return []string{stageRef(*api, *stage)}
}

// claim records that the key of hash reaches stage through plan planID.
func (st *importState) claim(hash, stage, planID string) {
	if st.claims[hash] == nil {
		st.claims[hash] = map[string]string{}
	}
	st.claims[hash][stage] = planID
}

// keyImport is what a resolved import stores: its keys (by first accepted
// row; the last accepted row's fields), the (plan, key hash) memberships
// to add, and one warning per refused row.
type keyImport struct {
	keys     []*importedKey
	members  [][2]string
	warnings []string
}

// importedKey is one key an import upserts; id is set for a new key too.
type importedKey struct {
	id, hash, name, description string
	enabled                     bool
}

// maxIndexedNameBytes is the longest key name (UTF-8 bytes) that always
// fits a btree index row (2,704 bytes with its 12 bytes of headers); a
// longer name fits only if it compresses, which only the insert finds out,
// so an import refuses it as CreateApiKey's 54000 would.
const maxIndexedNameBytes = 2692

// resolve checks rows in file order against st, as if each were stored in
// turn: a row's plans must exist, and its key may reach each stage through
// one plan only, counting claims in the database and of earlier rows.
func (st *importState) resolve(rows []plans.KeyImport) *keyImport {
	imp := &keyImport{}
	byHash := map[string]*importedKey{}
	members := map[[2]string]bool{}
	for _, r := range rows {
		claims, err := st.rowClaims(r)
		if err != nil {
			imp.warnings = append(imp.warnings, fmt.Sprintf("line %d: %s", r.Line, plans.ErrorMessage(err)))
			continue
		}
		k := byHash[r.Hash]
		if k == nil {
			k = &importedKey{id: st.ids[r.Hash], hash: r.Hash}
			if k.id == "" {
				k.id = plans.NewID(plans.LongIDLen)
			}
			byHash[r.Hash] = k
			imp.keys = append(imp.keys, k)
		}
		k.name, k.description, k.enabled = r.Name, r.Description, r.Enabled
		for stage, planID := range claims {
			st.claim(r.Hash, stage, planID)
		}
		for _, planID := range r.PlanIDs {
			if m := [2]string{planID, r.Hash}; !members[m] {
				members[m] = true
				imp.members = append(imp.members, m)
			}
		}
	}
	return imp
}

// rowClaims returns the stage claims row r adds to its key, or the error
// that refuses the row.
func (st *importState) rowClaims(r plans.KeyImport) (map[string]string, error) {
	if len(r.Name) > maxIndexedNameBytes {
		return nil, plans.Invalid("name", "%s", msgNameTooLong)
	}
	claims := map[string]string{}
	for _, planID := range r.PlanIDs {
		stages, ok := st.plans[planID]
		if !ok {
			return nil, plans.Invalid("usageplanIds", "%s: %s", msgNoPlan, planID)
		}
		for _, stage := range stages {
			other, ok := claims[stage]
			if !ok {
				other, ok = st.claims[r.Hash][stage]
			}
			if ok && other != planID {
				return nil, plans.Conflict("%s: stage %s, usage plans %s and %s",
					conflicts["key_stage_claims_pkey"], stage, other, planID)
			}
			claims[stage] = planID
		}
	}
	return claims, nil
}

// storeImport upserts imp's keys and adds its memberships, one statement
// each; it returns the keys' ids in imp's order (a key a concurrent
// CreateApiKey stored meanwhile keeps that key's id).
func storeImport(ctx context.Context, tx pgx.Tx, now time.Time, imp *keyImport) ([]string, error) {
	n := len(imp.keys)
	ids, hashes, names, descs, enabled := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]bool, n)
	for i, k := range imp.keys {
		ids[i], hashes[i], names[i], descs[i], enabled[i] = k.id, k.hash, k.name, k.description, k.enabled
	}
	rows, _ := tx.Query(ctx, `INSERT INTO api_keys (id, key_hash, name, description, enabled, created_at, updated_at)
		SELECT id, hash, name, description, enabled, $6, $6
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::boolean[]) AS t(id, hash, name, description, enabled)
		ON CONFLICT (key_hash) DO UPDATE SET name = excluded.name, description = excluded.description,
			enabled = excluded.enabled, updated_at = excluded.updated_at
		RETURNING key_hash, id`, ids, hashes, names, descs, enabled, now)
	stored := make(map[string]string, n)
	var hash, id string
	if _, err := pgx.ForEachRow(rows, []any{&hash, &id}, func() error { stored[hash] = id; return nil }); err != nil {
		return nil, err
	}
	planIDs, keyIDs := make([]string, len(imp.members)), make([]string, len(imp.members))
	for i, m := range imp.members {
		planIDs[i], keyIDs[i] = m[0], stored[m[1]]
	}
	if _, err := tx.Exec(ctx, `INSERT INTO usage_plan_keys (plan_id, key_id, created_at)
		SELECT plan_id, key_id, $3 FROM unnest($1::text[], $2::text[]) AS t(plan_id, key_id)
		ON CONFLICT (plan_id, key_id) DO NOTHING`, planIDs, keyIDs, now); err != nil {
		return nil, err
	}
	if err := keyAnchorsFit(ctx, tx, `(k.plan_id, k.key_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))`, planIDs, keyIDs); err != nil {
		return nil, err
	}
	for i, k := range imp.keys {
		ids[i] = stored[k.hash]
	}
	return ids, nil
}
