package dispatch

// Unavailable returns a Backend for a kind that cannot run in this build or
// on this machine: registered under its name, it lets lathe say why, and
// every use is an ErrUnavailable error carrying reason.
func Unavailable(name, reason string) Backend { return unavailable{name, reason} }

type unavailable struct {
	name   string
	reason string
}

func (u unavailable) err() error {
	return &Error{Kind: ErrUnavailable, Detail: u.name + " is unavailable: " + u.reason,
		Fix: "use lathe.CPU, or see lathe.DeviceStatus()"}
}
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
