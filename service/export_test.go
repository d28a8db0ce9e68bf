package service

// SetListScanStarts sets the hook ListTasks runs between taking the index's
// end and reading back from it; the returned func restores it.
func SetListScanStarts(fn func()) (restore func()) {
	old := listScanStarts
	listScanStarts = fn
	return func() { listScanStarts = old }
}

// SetListBounds sets the entries one ListTasks call looks at for a page
// and reads to count; the returned func restores them.
func SetListBounds(scan, count int) (restore func()) {
	oldScan, oldCount := listScanBound, listCountBound
	listScanBound, listCountBound = scan, count
	return func() { listScanBound, listCountBound = oldScan, oldCount }
}
