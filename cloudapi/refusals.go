package cloudapi

import (
	"context"

	"github.com/fleetcam/fleetcam/store"
	"github.com/gin-gonic/gin"
)

// refusal is a call refused with an answer that may not tell the caller
// everything: the answer is what the caller gets, the audit entries keep
// the reason for the tenants allowed to read it.
type refusal struct {
	answer  *APIError
	entries []store.AuditChange
}

func (r *refusal) Error() string { return r.answer.Error() }

// Unwrap makes the refusal answer as its answer wherever it is failed.
func (r *refusal) Unwrap() error { return r.answer }

// refuse writes r's audit entries, attributed to the caller, in a
// transaction of their own (the call's own changes, if any, are not
// made), and returns r's answer. A caller that went away does not stop the
// entries; entries that cannot be written are logged and the answer stays.
func (s *Server) refuse(c *gin.Context, r *refusal) error {
	ctx := context.WithoutCancel(c.Request.Context())
	err := s.store.Update(ctx, principal(c).actor(requestID(c)), func(tx *store.Tx) error {
		for _, e := range r.entries {
			if err := tx.Audit(e); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.log.Error("audit of a refused call failed", "requestId", requestID(c), "route", c.FullPath(), "err", err)
	}
	return r.answer
}
