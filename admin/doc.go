// Package admin is tollgate's control plane: the subset of the Amazon API
// Gateway REST management API (2015-07-09) described in docs/behaviour.md ("Admin API"),
// served over HTTP so that the AWS CLI, the AWS SDKs and infrastructure tools
// can manage tollgate with --endpoint-url.
//
// The package is an adapter: it authenticates the caller (AWS Signature
// Version 4 or a bearer token), decodes AWS's restJson wire format, applies
// the operation through a Store (plans/postgres) and, after every committed
// write, asks a Publisher (push) to carry the change to the data plane.
//
// Wire format, as AWS: JSON in camelCase; lists are {"item": [...],
// "position": "..."}; timestamps are epoch seconds; errors are
// {"message": "..."} with the error type in the x-amzn-ErrorType header,
// mapped from plans.Error kinds by one table (errors.go). Updates are JSON
// patch operations whose paths are parsed per resource (patch.go and the
// *patch.go files); all operations of one request are applied to the loaded
// record and the result is validated as a whole inside the store's
// transaction.
package admin
