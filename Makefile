# offcpu build. `make` builds build/offcpu; `make install` puts it in
# $(PREFIX)/bin with its man page; `make demo` records the bundled workload
# and shows its report; `make test` runs every suite (about 17 minutes).
# Sources are found by wildcard: add a .c file to a src/ folder and it is built.

CC       ?= cc
CLANG    ?= clang
BPFTOOL  ?= $(shell command -v bpftool 2>/dev/null || echo /usr/sbin/bpftool)
PREFIX   ?= /usr/local
BUILD    ?= build
V        ?= 0
SAN      ?=

ifeq ($(V),1)
Q =
msg =
else
Q = @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

ARCH := $(shell uname -m | sed 's/x86_64/x86/;s/aarch64/arm64/')

CFLAGS  ?= -O2 -g
CFLAGS  += -std=gnu11 -Wall -Wextra -Werror -D_GNU_SOURCE -fno-omit-frame-pointer
# GCC's generic x86-64 tuning zeroes a struct of 64 to a few hundred bytes
# with `rep stos`, whose start-up costs tens of cycles on AMD's cores, and
# the reader zeroes three per sample (the record, 224 bytes; an offcpu
# payload's fields; the resolved sample, 88). Vector stores instead, where
# the compiler knows the option (clang uses them already): `report` of the
# offcpu 300 MB bench recording, 15 alternating runs, 9 % less CPU time.
MEMSET_STRATEGY := -mmemset-strategy=vector_loop:512:noalign,libcall:-1:noalign
MEMSET_FLAG := $(shell $(CC) -Werror $(MEMSET_STRATEGY) -E -x c /dev/null >/dev/null 2>&1 && echo '$(MEMSET_STRATEGY)')
CFLAGS  += $(MEMSET_FLAG)
CPPFLAGS += -I$(BUILD) -Isrc
# C++ names are demangled by __cxa_demangle, from GCC's C++ support
# library, linked in where it is found: loading libstdc++.so and running
# its start-up cost every command 1-1.6 ms (`offcpu --version` 4.3-5.1 ms
# -> 3.4-3.5 ms, 40 runs each).
SUPCXX  := $(shell $(CC) -print-file-name=libsupc++.a)
LDLIBS  += -lbpf -lelf -ldw -lz -lpthread $(if $(filter /%,$(SUPCXX)),$(SUPCXX),-lstdc++)

ifneq ($(SAN),)
CFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif
# FUZZ=1 (set by `make fuzz`, with CC=clang and BUILD=build-fuzz): libFuzzer
# coverage plus ASan+UBSan in every object.
ifneq ($(FUZZ),)
CFLAGS  += -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
endif

SRC_DIRS := src/util src/perfdata src/symbols src/unwind src/record src/session src/profile \
	    src/output src/output/flamegraph src/output/pprof src/cmd
LIB_SRCS := $(foreach d,$(SRC_DIRS),$(wildcard $(d)/*.c))
LIB_OBJS := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(LIB_SRCS))
MAIN_OBJ := $(BUILD)/obj/main.o
BPF_SRCS := $(wildcard src/bpf/*.bpf.c)
SKELS    := $(patsubst src/bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))

FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(patsubst tests/fuzz/%.c,build-fuzz/fuzz/%,$(FUZZ_SRCS))

WORKLOAD_SRCS := $(wildcard tests/workloads/*.c)
WORKLOAD_BINS := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(WORKLOAD_SRCS))
WORKLOAD_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -fno-inline -pthread

.SECONDARY:
.PHONY: all deps deps-demo test unit integration demo install clean workloads fuzz fuzz-build
all: $(BUILD)/offcpu workloads

# What `make test` needs (browsers, Go, hotspot...); deps-demo: what building
# and `make demo` need, no more.
deps:
	$(Q)scripts/deps.sh test

deps-demo:
	$(Q)scripts/deps.sh demo

$(BUILD)/vmlinux.h:
	$(Q)mkdir -p $(BUILD)
	$(Q)if [ ! -r /sys/kernel/btf/vmlinux ]; then \
		echo "offcpu: this kernel has no BTF (/sys/kernel/btf/vmlinux missing); CONFIG_DEBUG_INFO_BTF=y is required" >&2; exit 1; fi
	$(Q)if [ ! -x "$(BPFTOOL)" ]; then \
		echo "offcpu: bpftool not found: run 'sudo scripts/deps.sh' (or 'sudo make demo', which does) first" >&2; exit 1; fi
	$(call msg,GEN,$@)
	$(Q)$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: src/bpf/%.bpf.c $(wildcard src/bpf/*.h) $(BUILD)/vmlinux.h
	$(call msg,BPF,$@)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -I$(BUILD) -Isrc/bpf -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_skel > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.o: src/%.c $(SKELS) $(wildcard src/*/*.h src/*/*/*.h)
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -c $< -o $@

# The flame graph's CSS and JavaScript, as C strings for the SVG writer.
$(BUILD)/fg_assets.h: src/output/flamegraph/flamegraph.css src/output/flamegraph/flamegraph.js
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(BUILD)
	$(Q)! grep -n ']]>' $^ || { echo "$@: ']]>' would end the SVG's CDATA" >&2; exit 1; }
	$(Q)for v in css js; do printf 'static const char fg_%s[] =\n' $$v; \
		sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' src/output/flamegraph/flamegraph.$$v; \
		printf ';\n'; done > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/output/flamegraph/svg.o: $(BUILD)/fg_assets.h

# The layers' include direction (scripts/check-includes.sh, src/README.md):
# the build fails on an include that points up.
$(BUILD)/includes.ok: scripts/check-includes.sh $(LIB_SRCS) src/main.c $(wildcard src/*/*.h src/*/*/*.h)
	$(call msg,CHECK,include direction)
	$(Q)mkdir -p $(BUILD)
	$(Q)scripts/check-includes.sh src && touch $@

$(BUILD)/liboffcpu.a: $(LIB_OBJS) $(BUILD)/includes.ok
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $(LIB_OBJS)

$(BUILD)/offcpu: $(MAIN_OBJ) $(BUILD)/liboffcpu.a
	$(call msg,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/liboffcpu.a
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-parameter -o $@ $< $(BUILD)/liboffcpu.a $(LDFLAGS) $(LDLIBS) -lcmocka

$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_common.h $(BUILD)/liboffcpu.a
	$(Q)mkdir -p $(dir $@)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(BUILD)/liboffcpu.a $(LDLIBS)

$(BUILD)/workloads/%: tests/workloads/%.c tests/workloads/wl.h
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WORKLOAD_CFLAGS) -o $@ $<

# Workloads without frame pointers, for the --call-graph dwarf checks: the
# same sources built -O2 -fomit-frame-pointer, the library unwindmix
# dlopens, and a copy of unwindmix (built with frame pointers) stripped of
# its .eh_frame, which the unwinder must step by its frame pointers.
NOFP_CFLAGS := -std=gnu11 -Wall -Wextra -Werror -O2 -g -fomit-frame-pointer -pthread
NOFP_BINS := $(addprefix $(BUILD)/workloads/,waitmix-nofp schedmix-nofp chainmix-nofp tlorder-nofp unwindmix-nofp stuck-nofp \
		unwindmix-nocfi libunwlib.so)

$(BUILD)/workloads/%-nofp: tests/workloads/%.c tests/workloads/wl.h
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(NOFP_CFLAGS) -o $@ $< -ldl

$(BUILD)/workloads/libunwlib.so: tests/workloads/lib/unwlib.c
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(NOFP_CFLAGS) -fPIC -shared -o $@ $<

$(BUILD)/workloads/unwindmix-nocfi: $(BUILD)/workloads/unwindmix
	$(call msg,OBJCOPY,$@)
	$(Q)objcopy --remove-section=.eh_frame --remove-section=.eh_frame_hdr $< $@

# stubs calls a one-instruction function of its own library through the PLT.
$(BUILD)/workloads/libstublib.so: tests/workloads/lib/stublib.c
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(NOFP_CFLAGS) -fPIC -shared -o $@ $<

$(BUILD)/workloads/stubs: tests/workloads/stubs.c $(BUILD)/workloads/libstublib.so
	$(Q)mkdir -p $(dir $@)
	$(call msg,CC,$@)
	$(Q)$(CC) $(WORKLOAD_CFLAGS) -o $@ $< -L$(BUILD)/workloads -lstublib -Wl,-rpath,'$$ORIGIN'

workloads: $(WORKLOAD_BINS) $(NOFP_BINS)

unit: $(UNIT_BINS)
	$(Q)tests/run-unit.sh $(BUILD)

# The whole suite: dependencies, build, unit tests (plain and sanitized),
# integration tests against the real kernel and Linux perf (plain and
# sanitized): about 17 minutes on 2 vCPUs; it says so when it starts, and
# how long it took when it ends.
test: deps
	$(Q)tests/run-all.sh

# Fuzz targets (tests/fuzz/fuzz_*.c), libFuzzer + ASan + UBSan, in build-fuzz;
# `make fuzz` runs each for FUZZ_RUNS inputs from its seed corpus
# (tests/fuzz/corpus/TARGET); FUZZ_TIME=SECS runs each that long instead.
fuzz-build:
	$(Q)$(MAKE) --no-print-directory BUILD=build-fuzz FUZZ=1 CC=clang $(FUZZ_BINS)

fuzz: deps fuzz-build
	$(Q)tests/fuzz/run.sh

# The build starts once the packages are in, even under make -j.
demo: deps-demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh

install: $(BUILD)/offcpu
	install -D -m 0755 $(BUILD)/offcpu $(DESTDIR)$(PREFIX)/bin/offcpu
	install -D -m 0644 doc/offcpu.1 $(DESTDIR)$(PREFIX)/share/man/man1/offcpu.1

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
