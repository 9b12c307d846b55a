package compare

// DisableMemo makes every comparison compute its bootstrap afresh until the returned function
// is called.
func DisableMemo() (restore func()) {
	memoOff = true
	return func() { memoOff = false }
}
