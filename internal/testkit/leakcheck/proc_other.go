//go:build !unix

package leakcheck

func ProcessExists(pid int) (exists, known bool) { return false, false }

func GroupExists(pgid int) (exists, known bool) { return false, false }

func openFDs() (n int, ok bool) { return 0, false }

func fdList() string { return "" }
