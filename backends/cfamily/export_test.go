package cfamily

// SetPlanOff turns the printing plan off (every value declared, every loop in the general
// form) until the returned function restores it.
func SetPlanOff() (restore func()) {
	planOff = true
	return func() { planOff = false }
}
