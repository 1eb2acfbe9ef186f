//go:build !linux

package footprint

func dropExecutablePages() (Result, error) { return Result{}, nil }
