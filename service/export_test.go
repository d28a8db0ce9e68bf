package service

// SetListScanStarts sets the hook ListTasks runs between taking the index's
// end and reading back from it; the returned func restores it.
func SetListScanStarts(fn func()) (restore func()) {
	old := listScanStarts
	listScanStarts = fn
	return func() { listScanStarts = old }
}
