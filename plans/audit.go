package plans

// Audit sources: the door a change came through (docs/operations.md,
// "Audit log").
const (
	SourceAPI      = "api"      // the AWS-style admin API (CLI, SDKs, curl)
	SourceConsole  = "console"  // the operator console
	SourceImport   = "import"   // ImportRestApi, PutRestApi, ImportApiKeys
	SourceConfig   = "config"   // tollgate config apply
	SourcePortal   = "portal"   // the developer portal
	SourceRotation = "rotation" // API key rotation
)
