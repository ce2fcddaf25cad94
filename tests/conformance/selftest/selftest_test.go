// The conformance harness's own cases: each behaves as named inside Ember (where the file
// ember-marker is in the function's files) and passes natively, but the last, which fails there.
package selftest

import (
	"os"
	"syscall"
	"testing"
)

func inEmber() bool {
	_, err := os.Stat("ember-marker")
	return err == nil
}

func TestPass(t *testing.T) {
	if os.Getpagesize() != 4096 {
		t.Fatalf("page size %d", os.Getpagesize())
	}
}

func TestFail(t *testing.T) {
	if inEmber() {
		t.Fatal("a deliberate failure in Ember")
	}
}

func TestCrash(t *testing.T) {
	if inEmber() {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}

func TestHang(t *testing.T) {
	for inEmber() {
	}
}

func TestSkip(t *testing.T) {
	t.Skip("skipped everywhere")
}

func TestNotApplicable(t *testing.T) {
	if !inEmber() {
		t.Fatal("fails natively, so not applicable")
	}
}
