package gateway

import "tollgate/plans"

// ForgetChange clears the refusal memory a config change may have made
// wrong (push.ReaderOptions.OnEvent). A change that carries a new snapshot
// (plan, stage, account or API edits) clears everything: every compiled
// stage is new, so no older entry could be used again anyway. A change of
// key records alone clears nothing: it changes no limit's state, and a key
// that moves to another plan is decided on that plan's own Redis keys.
func (s *Server) ForgetChange(c plans.Change) {
	if c.Snapshot || len(c.Plans) > 0 || len(c.Stages) > 0 {
		s.deny.forget(nil)
	}
}

// ForgetUsage clears the remembered refusals of keyID in planID after its
// usage was updated (UpdateUsage; push.ReaderOptions.OnUsage).
func (s *Server) ForgetUsage(planID, keyID string) {
	s.deny.forget(func(e *denyEntry) bool { return e.keyID == keyID && e.planID == planID })
}

// ForgetRefusals clears all refusal memory (push.ReaderOptions.OnReload:
// events may have been missed, or Redis may have lost its counters).
func (s *Server) ForgetRefusals() { s.deny.forget(nil) }
