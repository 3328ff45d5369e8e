package plans

// KeyImport is one API key of an ImportApiKeys file, ready for the store:
// Line is its line in the file (for warnings), Hash the HashKey of its
// value (the value itself never reaches the store), PlanIDs the usage
// plans to put it in. A key whose hash exists already is updated (name,
// description, enabled) and joins the plans, as AWS: "the most recent
// version overwrites the previous one".
type KeyImport struct {
	Line        int
	Name        string
	Description string
	Enabled     bool
	Hash        string
	PlanIDs     []string
}

// KeyImportResult is AWS's ImportApiKeys answer: the ids of the keys
// imported, in file order, and one warning per row skipped.
type KeyImportResult struct {
	IDs      []string `json:"ids"`
	Warnings []string `json:"warnings"`
}
