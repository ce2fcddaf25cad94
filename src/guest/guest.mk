# The in-guest runtime: freestanding, linked at EMBER_RT_BASE, embedded in the ember binary.
GRT_SRC    := src/guest/rt.c src/guest/rt_io.c src/guest/rt_time.c src/guest/rt_random.c src/guest/rt_mem.c src/guest/rt_arena.c \
	src/guest/rt_fs.c \
	src/guest/rt_entry.S
# every handler takes the six arguments of a system call, used or not: -Wno-unused-parameter
GRT_CFLAGS := -std=c11 -O2 -Wall -Wextra -Werror -Wno-unused-parameter -Iinclude -ffreestanding -nostdlib -static \
	-fno-pic -fno-pie -no-pie -mgeneral-regs-only -fno-stack-protector -mno-red-zone \
	-fno-asynchronous-unwind-tables -fno-builtin -Wl,--build-id=none -Wl,-T,src/guest/rt.ld
$(B)/guest-rt/ember-rt.elf: $(GRT_SRC) src/guest/rt.h src/guest/rt_arena.h src/guest/rt.ld include/ember/abi.h
	@mkdir -p $(dir $@)
	$(BLOB_CC) $(GRT_CFLAGS) -o $@ $(GRT_SRC)
# the flat image from EMBER_RT_BASE, .bss included as zeros
$(B)/guest-rt/ember-rt: $(B)/guest-rt/ember-rt.elf
	objcopy -O binary --set-section-flags .bss=alloc,load,contents $< $@
$(B)/guest-rt/rt_blob.o: $(B)/guest-rt/ember-rt
	cd $(B)/guest-rt && ld -r -z noexecstack -b binary -o rt_blob.o ember-rt
CORE_OBJ += $(B)/guest-rt/rt_blob.o
# the vDSO: a shared object of system-call stubs (src/guest/vdso.S), its symbol table kept so the
# loader can prove its sites safe to call through the runtime; entry set so it loads as an image
$(B)/guest-rt/ember-vdso.so: src/guest/vdso.S src/guest/vdso.lds src/guest/vdso_layout.ld
	@mkdir -p $(dir $@)
	$(BLOB_CC) -nostdlib -shared -fPIC -Wl,-soname=linux-vdso.so.1 -Wl,--hash-style=both \
		-Wl,--version-script=src/guest/vdso.lds -Wl,-T,src/guest/vdso_layout.ld \
		-Wl,--build-id=none -Wl,-e,__vdso_clock_gettime -Wl,-z,noexecstack \
		-o $@ src/guest/vdso.S
$(B)/guest-rt/vdso_blob.o: $(B)/guest-rt/ember-vdso.so
	cd $(B)/guest-rt && ld -r -z noexecstack -b binary -o vdso_blob.o ember-vdso.so
CORE_OBJ += $(B)/guest-rt/vdso_blob.o
