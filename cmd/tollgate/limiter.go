package main

import (
	"tollgate/engine/failopen"
	"tollgate/engine/lease"
	"tollgate/engine/refusal"
	"tollgate/gateway"
	"tollgate/limit"
	"tollgate/plans"
)

// limiterStack stacks the limiter layers on the gateway's engine, as chi
// stacks middleware, and returns the top (docs/architecture.md):
// fail-open charges nearest the engine (failure mode open only; the
// node's pending charges carry its settles in either mode), capacity
// leases (TOLLGATE_LEASE_LIFETIME > 0, on one primary and on Redis
// Cluster; not under a test clock, which the leases' node-clock lifetimes
// do not follow), then the refusal memory on top.
func (m *Main) limiterStack() limit.Decider {
	var layers []limit.Layer
	m.charges = failopen.New(m.engine, failopen.Options{Logger: m.Logger}) // settles, in either mode
	m.registry.MustRegister(m.charges.Collectors()...)
	if m.Config.LimiterFailureMode != gateway.FailClosed {
		layers = append(layers, m.charges.Layer)
	}
	var keep = m.Config.LeaseLifetime
	if m.Config.LeaseLifetime > 0 && m.clock == nil {
		m.leases = lease.New(m.engine, lease.Options{Lifetime: m.Config.LeaseLifetime, Logger: m.Logger})
		layers = append(layers, m.leases.Layer)
		m.registry.MustRegister(m.leases.Collectors()...)
		keep = 2 * m.leases.Lifetime()
	} else {
		keep = 0
	}
	// with leases, units other nodes took may come back before a
	// refusal's moment: refusals are used for two lifetimes at most
	m.refusals = refusal.New(refusal.Options{Keep: keep})
	layers = append(layers, m.refusals.Layer)
	return limit.Stack(m.engine, layers...)
}

// forgetChange clears what a config change may have made wrong in the
// layers (push.ReaderOptions.OnEvent).
func (m *Main) forgetChange(c plans.Change) {
	m.refusals.ForgetChange(c)
	if m.leases != nil {
		m.leases.ForgetChange(c)
	}
}

// forgetUsage clears the layers' state of a key whose usage was set
// (push.ReaderOptions.OnUsage).
func (m *Main) forgetUsage(planID, keyID string) {
	m.refusals.ForgetUsage(planID, keyID)
	if m.leases != nil {
		m.leases.ForgetUsage(planID, keyID)
	}
}

// forgetAll clears the layers' state after a reload
// (push.ReaderOptions.OnReload).
func (m *Main) forgetAll() {
	m.refusals.ForgetAll()
	if m.leases != nil {
		m.leases.ForgetAll()
	}
}
