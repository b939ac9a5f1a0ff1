//go:build !unix

package sessions

func processExists(pid int) (exists, known bool) { return false, false }

func openFDs() (n int, ok bool) { return 0, false }

func fdList() string { return "" }
