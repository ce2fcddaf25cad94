# The ptrace backend's stub: a freestanding static-PIE program, embedded into the ember binary.
STUB_CFLAGS := -std=c11 -Os -Wall -Wextra -Werror -Iinclude -ffreestanding -fno-stack-protector \
	-fPIE -fno-asynchronous-unwind-tables -nostdlib -static-pie -Wl,--build-id=none
$(B)/stub/ember-stub: src/vm/stub/stub.c include/ember/abi.h
	@mkdir -p $(dir $@)
	$(BLOB_CC) $(STUB_CFLAGS) -o $@ $<
$(B)/stub/stub_blob.o: $(B)/stub/ember-stub
	cd $(B)/stub && ld -r -z noexecstack -b binary -o stub_blob.o ember-stub
CORE_OBJ += $(B)/stub/stub_blob.o
