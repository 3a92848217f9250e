# luagent — build, test, demo, install.
#   make            build ./luagent
#   make test       install what is missing (as root), build, run every test
#   make check      the fast inner loop: build, C unit tests, specs that need no Docker, luacheck
#   make asan       build/asan/luagent (ASan/UBSan) running every spec and e2e test
#   make demo       run the energy-anomaly recipe end to end
#   make eval       the energy recipe's eval: 2 instruction texts x generated datasets, scored
#   make deps       install the Debian packages luagent needs (or print the apt-get line)
#   make install PREFIX=/usr/local   (the binary, the LuaLS annotations, the man page)
#   make man        build/luagent.1, the man page (luagent help --man)
#   make bench      print the benchmarks (never pass/fail)

VERSION   := 0.1.0
PREFIX    ?= /usr/local
CC        ?= cc
PKGS      := lua5.4 lua5.4-cjson yaml-0.1
# libcurl and OpenSSL are loaded at first use (src/core/curl_lazy.c, tls_lazy.c): only their headers are built against
CURL_CFLAGS = $(shell pkg-config --cflags libcurl)
BUILD_DEPS := liblua5.4-dev lua-cjson-dev libcurl4-openssl-dev libssl-dev libyaml-dev pkg-config musl-tools
RUN_DEPS  := python3 docker.io debootstrap tar lua-check curl valgrind runsc
DEPS      := $(BUILD_DEPS) $(RUN_DEPS) lua5.4

# pkg-config runs when a recipe needs it, after `deps` may have installed it
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS))

CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE -Wall -Wextra -Werror -MMD -MP \
           -DLUAGENT_VERSION='"$(VERSION)"'
LDLIBS  += -ldl -lm

# The layers are folders (DESIGN.md in the repo, "Where things live"):
#   src/core/  pure C: no Lua header reachable (built without Lua's include path; checked below)
#   src/lua/   the Lua bindings and the scheduler
#   src/       the host (host.c owns the Lua state) and main.c (the command line)
CORE_SRC  := $(wildcard src/core/*.c)
LUA_SRC   := $(wildcard src/lua/*.c)
TOP_SRC   := $(wildcard src/*.c)
SRC       := $(CORE_SRC) $(LUA_SRC) $(TOP_SRC)
# what a pure core may include: its own folder, libcurl's and libyaml's headers; never Lua's
CORE_CFLAGS = $(CURL_CFLAGS) $(shell pkg-config --cflags yaml-0.1)
HOST_CFLAGS = -iquote src -iquote src/core -iquote src/lua $(PKG_CFLAGS) $(CURL_CFLAGS)
# lua/meta/ holds LuaLS annotations (definitions, not modules): embedded as
# assets for `luagent meta`, installed to share/luagent/meta. The sandbox
# assets: the image's Dockerfile and offline build, and the supervisor binary
# staged into every session (build/luagent-supervisor, built below).
LUA_FILES := $(shell find lua -name '*.lua' -not -path 'lua/meta/*' | LC_ALL=C sort)
META_FILES := $(shell find lua/meta -name '*.lua' 2>/dev/null | LC_ALL=C sort)
ASSETS    := sandbox/Dockerfile sandbox/build-offline.sh build/luagent-supervisor $(META_FILES) \
             lua/luagent/model/models.yaml $(sort $(wildcard doc/help/*.md))
# `luagent new`'s templates: recipes/templates/, and the energy recipe for --from energy_anomaly
ASSETS    += $(shell find recipes/templates -type f 2>/dev/null | LC_ALL=C sort) \
             $(sort $(wildcard recipes/energy_*.lua recipes/energy_*.yaml))
OBJ       := $(SRC:src/%.c=build/%.o) build/embedded.o

.PHONY: all test check asan demo eval deps install bench clean check-deps man

all: luagent

luagent: $(OBJ)
	$(CC) $(LDFLAGS) -o $@ $(OBJ) $(PKG_LIBS) $(LDLIBS)

build/core/%.o: src/core/%.c build/core-is-pure.stamp
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(CORE_CFLAGS) -c -o $@ $<

build/%.o: src/%.c | build
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(HOST_CFLAGS) -c -o $@ $<

# A pure core never includes a Lua header (it is also built without Lua's
# include path, so one that did would not compile): said once, by name.
build/core-is-pure.stamp: $(wildcard src/core/*.c src/core/*.h) | build
	@if grep -lE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](lua|lauxlib|lualib)\.h[>"]' src/core/*.c src/core/*.h; then \
	  echo "src/core/ is pure C: the files above include a Lua header (move the binding to src/lua/)" >&2; exit 1; fi
	@touch $@

# the Lua library is embedded as bytecode (debug information kept): no parsing at start-up
build/luac: tools/luac.c | build
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -o $@ $< $(PKG_LIBS) $(LDLIBS)

build/bytecode.stamp: $(LUA_FILES) build/luac
	rm -rf build/bytecode
	build/luac build/bytecode $(LUA_FILES)
	touch $@

build/embedded.c: build/bytecode.stamp $(ASSETS) tools/embed.sh | build
	tools/embed.sh $@ --modules-from build/bytecode -- $(LUA_FILES) -- $(ASSETS)

build/embedded.o: build/embedded.c
	$(CC) $(CFLAGS) -Isrc -c -o $@ $<

build:
	mkdir -p build

deps:
	@tools/deps.sh $(DEPS)

# `make test` and `make demo` work as the first command on a fresh machine:
# they install what is missing, build, and start what they need.
test: deps
	$(MAKE) luagent
	tests/run

# Under a minute; never starts Docker (tests/run --check skips what needs it).
check: deps
	$(MAKE) luagent
	tests/run --check

# The whole binary with ASan/UBSan, in build/asan/ beside the normal build, run
# through every test (leaks reported, system libraries' own in tests/asan.supp).
# One test: make build/asan/luagent && LUAGENT_BIN=build/asan/luagent tests/run PATTERN
SANITIZE := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_OBJ := $(OBJ:build/%=build/asan/%)

asan: deps
	$(MAKE) build/asan/luagent
	LUAGENT_BIN=build/asan/luagent tests/run

build/asan/luagent: $(ASAN_OBJ)
	$(CC) $(LDFLAGS) $(SANITIZE) -o $@ $(ASAN_OBJ) $(PKG_LIBS) $(LDLIBS)

build/asan/core/%.o: src/core/%.c build/core-is-pure.stamp
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -O1 $(SANITIZE) $(CORE_CFLAGS) -c -o $@ $<

build/asan/%.o: src/%.c | build/asan
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -O1 $(SANITIZE) $(HOST_CFLAGS) -c -o $@ $<

build/asan/embedded.o: build/embedded.c | build/asan
	$(CC) $(CFLAGS) -O1 $(SANITIZE) -Isrc -c -o $@ $<

build/asan:
	mkdir -p build/asan

demo: deps
	$(MAKE) luagent
	tools/demo.sh

# recipes/energy_anomaly.eval.yaml over recipes/eval_data/ (generated once, seeded)
eval: deps
	$(MAKE) luagent
	tools/start-docker.sh
	./luagent sandbox build
	test -d recipes/eval_data || ./luagent run -q recipes/energy_eval_data.lua recipes/eval_data
	./luagent eval recipes/energy_anomaly.eval.yaml

bench: deps
	$(MAKE) luagent
	bench/run

install: luagent build/luagent.1
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 luagent $(DESTDIR)$(PREFIX)/bin/luagent
	install -d $(DESTDIR)$(PREFIX)/share/luagent/meta
	install -m 644 $(META_FILES) $(DESTDIR)$(PREFIX)/share/luagent/meta/
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 build/luagent.1 $(DESTDIR)$(PREFIX)/share/man/man1/luagent.1

# The man page, from the same pages as `luagent help` (lua/luagent/cli/help_pages.lua, doc/help/*.md).
man: build/luagent.1
build/luagent.1: luagent
	./luagent help --man > $@.tmp && mv $@.tmp $@

clean:
	rm -rf build luagent

# The sandbox supervisor (sandbox/supervisor/DESIGN.md): a static binary with no
# dependency on the image, embedded into luagent as an asset. musl-gcc
# (Debian's musl-tools, a build dependency; installed when missing and we are
# root), else the system compiler with -static.
SUPERVISOR_SRC := $(wildcard sandbox/supervisor/*.c) build/supervisor/kernel_source.c \
                  src/core/supervisor_proto.c src/core/egress_frames.c src/core/buf.c \
                  src/core/tar_reader.c src/core/tar_common.c
SUPERVISOR_CC   = $(shell command -v musl-gcc || { tools/deps.sh musl-tools >/dev/null 2>&1 && command -v musl-gcc; } || echo $(CC))
.PHONY: supervisor supervisor-sources
supervisor: build/luagent-supervisor
# (the list, for builds of the same sources with other flags: tests/e2e/supervisor_test.sh's ASan build)
supervisor-sources:
	@echo $(SUPERVISOR_SRC)
build/luagent-supervisor: $(SUPERVISOR_SRC) $(wildcard sandbox/supervisor/*.h) src/core/supervisor_proto.h src/core/egress_frames.h src/core/buf.h \
                         src/core/tar.h src/core/tar_internal.h | build
	$(SUPERVISOR_CC) -static -Os -s -std=c11 -D_DEFAULT_SOURCE -D_GNU_SOURCE -Wall -Wextra -Werror -iquote src/core \
	  -iquote sandbox/supervisor -o $@ $(SUPERVISOR_SRC)

# The Python kernel (sandbox/supervisor/kernel.h), a .py embedded as a C string.
build/supervisor/kernel_source.c: sandbox/supervisor/kernel.py | build
	@mkdir -p $(@D)
	{ echo '/* generated from sandbox/supervisor/kernel.py by the Makefile: do not edit */'; \
	  echo '#include "kernel.h"'; echo 'const char kernel_source[] = {'; \
	  od -An -v -tx1 $< | sed 's/\([0-9a-f][0-9a-f]\)/0x\1,/g'; echo '0x00};'; } > $@.tmp && mv $@.tmp $@

-include $(OBJ:.o=.d) $(ASAN_OBJ:.o=.d)
