package dispatch

// Unavailable returns a Backend for a kind that cannot run in this build or
// on this machine: it registers the kind so that lathe can say why, and every
// use is an ErrUnavailable error carrying reason.
func Unavailable(kind DeviceKind, reason string) Backend { return unavailable{kind, reason} }

type unavailable struct {
	kind   DeviceKind
	reason string
}

func (u unavailable) err() error {
	return &Error{Kind: ErrUnavailable, Detail: u.kind.String() + " is unavailable: " + u.reason,
		Fix: "use lathe.CPU, or see lathe.DeviceStatus()"}
}
func (u unavailable) Kind() DeviceKind    { return u.kind }
func (u unavailable) Open(int) error      { return u.err() }
func (u unavailable) Describe(int) string { return u.reason }
func (u unavailable) Count() int          { return 0 }
func (u unavailable) Alloc(Device, DType, int) (Buffer, error) {
	return nil, u.err()
}
func (u unavailable) Upload(Device, any) (Buffer, error) { return nil, u.err() }
func (u unavailable) Read(Device, Buffer, DType, int, int) (any, error) {
	return nil, u.err()
}
func (u unavailable) Sync(Device) error { return u.err() }
