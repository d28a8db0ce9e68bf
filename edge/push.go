package edge

// PushConfig configures push-notification delivery.
type PushConfig struct{}

// pushEnabled reports whether this edge delivers push notifications (what
// cards advertise).
func (e *Edge) pushEnabled() bool { return false }
