package main

import (
	"tollgate/admin"
	"tollgate/push"
	"tollgate/usage"
)

var (
	_ admin.UsageCounter   = (*usage.Limiter)(nil)
	_ admin.UsageAnnouncer = (*push.Publisher)(nil)
)
