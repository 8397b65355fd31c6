package conformance

// SetAvailableMemory replaces the machine's free-memory probe for a test and returns a function
// that puts it back.
func SetAvailableMemory(bytes uint64) (restore func()) {
	old := availableMemory
	availableMemory = func() (uint64, bool) { return bytes, true }
	return func() { availableMemory = old }
}
