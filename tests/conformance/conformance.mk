# The conformance suites' test programs, built once and kept in $(B)/conformance/ (docs/
# conformance.md): Go's standard-library test binaries with their root filesystems, CPython's
# regression tests beside the python runtime's files. `make conformance` builds them all;
# `make test` builds the fixed subset's (tests/conformance/subset.txt).
CONF_OUT    := $(B)/conformance
CONF_GO_ALL := sync sync_atomic time os os_exec os_signal io bufio bytes strings strconv sort \
	path_filepath encoding_json encoding_binary compress_gzip compress_flate crypto_sha256 \
	crypto_aes math_big regexp context runtime
# the subset make test runs: the packages tests/conformance/subset.txt names
CONF_GO_SUB := $(sort $(subst /,_,$(shell awk '$$1 == "go" { print $$2 }' tests/conformance/subset.txt)))
CONF_PY_ROOT := $(CONF_OUT)/python/root.stamp

.PHONY: conformance conformance-subset
conformance: $(CONF_GO_ALL:%=$(CONF_OUT)/go/%.dir) $(CONF_OUT)/go/selftest.dir $(CONF_PY_ROOT)
conformance-subset: $(CONF_GO_SUB:%=$(CONF_OUT)/go/%.dir) $(CONF_OUT)/go/selftest.dir

# NAME.dir is written last: NAME.test, NAME.root are whole once it is there
$(CONF_OUT)/go/%.dir: tests/conformance/go-build.sh
	sh tests/conformance/go-build.sh $(CONF_OUT)/go $(subst _,/,$*)

$(CONF_OUT)/go/selftest.dir: tests/conformance/go-build.sh tests/conformance/selftest/selftest_test.go
	sh tests/conformance/go-build.sh $(CONF_OUT)/go selftest tests/conformance/selftest

# CPython's closure (the python runtime's files) and its tests, linked where they can be
$(CONF_PY_ROOT): $(B)/runtimes/python3-files.stamp tests/conformance/conformance.mk
	rm -rf $(CONF_OUT)/python/root
	mkdir -p $(CONF_OUT)/python
	cp -al $(B)/runtimes/python3-files $(CONF_OUT)/python/root 2>/dev/null || \
		cp -a $(B)/runtimes/python3-files $(CONF_OUT)/python/root
	rm -rf $(CONF_OUT)/python/root/usr/lib/python3.11/test
	cp -a /usr/lib/python3.11/test $(CONF_OUT)/python/root/usr/lib/python3.11/test
	# what the tests start and look up: python itself at its path, Debian's dash as /bin/sh
	# (its libraries are the closure's), users and groups with the guest's uid 1000, the locale
	mkdir -p $(CONF_OUT)/python/root/usr/bin $(CONF_OUT)/python/root/bin $(CONF_OUT)/python/root/etc
	cp /usr/bin/python3.11 $(CONF_OUT)/python/root/usr/bin/python3.11
	ln -sf python3.11 $(CONF_OUT)/python/root/usr/bin/python3
	cp /bin/dash $(CONF_OUT)/python/root/bin/dash
	ln -sf dash $(CONF_OUT)/python/root/bin/sh
	sh runtimes/closure.sh $(CONF_OUT)/python/root /bin/dash /usr/bin/python3.11
	# the C.UTF-8 locale the harness's LANG names (without it Python's UTF-8 mode turns on)
	mkdir -p $(CONF_OUT)/python/root/usr/lib/locale
	[ ! -d /usr/lib/locale/C.utf8 ] || cp -a /usr/lib/locale/C.utf8 $(CONF_OUT)/python/root/usr/lib/locale/
	printf 'root:x:0:0:root:/root:/bin/sh\nember:x:1000:1000:ember:/tmp:/bin/sh\n' \
		>$(CONF_OUT)/python/root/etc/passwd
	printf 'root:x:0:\nember:x:1000:\n' >$(CONF_OUT)/python/root/etc/group
	touch $@
