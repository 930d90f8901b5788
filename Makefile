# empic - 2D3V electromagnetic relativistic PIC. `make` builds bin/empic (CPU backend, plus the
# CUDA backend when nvcc is found), `make run` runs decks/default.cfg, `make test` runs the suite.
# Missing Debian/PyPI dependencies are installed by tools/install-deps on the first build.

CC      ?= gcc
MARCH   ?= native
CFLAGS  ?= -O3 -g
CFLAGS  += -fno-math-errno -fno-trapping-math -std=c11 -march=$(MARCH) -Wall -Wextra -fopenmp -D_GNU_SOURCE
PKGS    := libconfig muparser
NVCC    ?= nvcc
CUDA    ?= $(if $(shell command -v $(NVCC) 2>/dev/null),1,0)
CUDA_ARCH ?= sm_90

# src/ holds the program (main, cli, util, version) and one folder per group: sim/ (the run and
# its time loop), deck/ (reading and checking the deck), state/ (what the backends advance),
# io/ (files), mpi/ (ranks), cpu/ (the CPU backend; its twin is cuda/).
SRC_DIRS := src src/sim src/deck src/state src/io src/mpi src/cpu
SRC     := $(filter-out src/main.c,$(wildcard $(SRC_DIRS:%=%/*.c)))
HDRS    := $(wildcard include/*.h $(SRC_DIRS:%=%/*.h))
INC     := -Iinclude $(SRC_DIRS:%=-I%)
OBJ     := $(SRC:src/%.c=build/%.o)
CU_SRC  := $(wildcard cuda/*.cu)
ifeq ($(CUDA),1)
CU_OBJ  := $(CU_SRC:cuda/%.cu=build/cuda_%.o)
CFLAGS  += -DEMPIC_CUDA
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC)))
CU_LIBS := -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart -ldl
# NCCL (design.md §14): GPU ranks exchange device memory through it, libnccl.so.2 loaded at
# run time (no link dependency); the build needs only nccl.h, from the CUDA toolkit,
# /usr/local/include or build/nccl/include (tools/install-deps fetches it). NCCL=0 leaves it
# out (the ranks then stage through the host). Expanded when used: after install-deps.
NCCL    ?= auto
ifneq ($(NCCL),0)
NCCL_INC = $(shell for d in $(CUDA_HOME)/include /usr/local/include build/nccl/include; do \
             [ -f $$d/nccl.h ] && { echo $$d; break; }; done)
endif
CU_NCCL  = $(if $(NCCL_INC),-DEMPIC_NCCL -I$(NCCL_INC))
endif
DEPS_STAMP := build/.deps
# MPI (design.md §12) when pkg-config finds it (tools/install-deps installs OpenMPI); MPI=0
# builds the one-rank program. Expanded when used: after install-deps on a fresh machine.
MPI     ?= auto
ifneq ($(MPI),0)
MPI_PKG  = $(shell pkg-config --exists mpi-c 2>/dev/null && echo mpi-c)
endif
# HDF5: with MPI the parallel library (Debian's libhdf5-openmpi-dev: the ranks write each dump
# and checkpoint together through MPI-IO), found by pkg-config (hdf5-openmpi) or in Debian's
# folders; without, the serial one (hdf5-serial, else hdf5). Named, not taken from the hdf5.pc
# alternative, which installing the parallel library may switch.
H5_PAR_INC := /usr/include/hdf5/openmpi
H5_PAR_LIB := /usr/lib/x86_64-linux-gnu/hdf5/openmpi
H5_PKG   = $(shell if [ -n "$(MPI_PKG)" ]; then pkg-config --exists hdf5-openmpi && echo hdf5-openmpi; \
             else pkg-config --exists hdf5-serial && echo hdf5-serial || echo hdf5; fi 2>/dev/null)
H5_DIRS  = $(if $(MPI_PKG),$(if $(H5_PKG),,$(if $(wildcard $(H5_PAR_INC)/hdf5.h),yes,$(error \
             MPI build without the parallel HDF5: install libhdf5-openmpi-dev (tools/install-deps) \
             or build with MPI=0))))
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) $(H5_PKG) $(MPI_PKG)) $(if $(MPI_PKG),-DEMPIC_MPI) \
             $(if $(H5_DIRS),-I$(H5_PAR_INC))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) $(H5_PKG) $(MPI_PKG)) \
             $(if $(H5_DIRS),-L$(H5_PAR_LIB) -lhdf5)
LIBS    = $(PKG_LIBS) -lfftw3 $(CU_LIBS) -lstdc++ -lm

TESTS   := $(wildcard tests/test_*.c)

.PHONY: all run test test-c test-py clean deps sanitize fuzz fuzz-smoke diag-install install
all: bin/empic bin/empic-diag diag-install

diag-install: | $(DEPS_STAMP)
	@tools/install-diag || echo "make: diag/ not installed (no pip or network?): empic-diag is" \
	  "missing; python3 -m diag still works in this folder"

PREFIX ?= /usr/local
install: bin/empic
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 755 bin/empic $(DESTDIR)$(PREFIX)/bin/empic

$(DEPS_STAMP): tools/install-deps
	@mkdir -p build
	tools/install-deps
	@touch $@
deps: $(DEPS_STAMP)

build/%.o: src/%.c $(HDRS) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(INC) -c $< -o $@

# The commit goes into version.o only; build/.commit changes when the commit does.
GIT_COMMIT := $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo unknown)
build/.commit: FORCE
	@mkdir -p build
	@echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
build/version.o: src/version.c src/version.h build/.commit | $(DEPS_STAMP)
	$(CC) $(CFLAGS) -DEMPIC_COMMIT='"$(GIT_COMMIT)"' $(INC) -c $< -o $@
FORCE:

build/cuda_%.o: cuda/%.cu $(HDRS) $(wildcard cuda/*.h) | $(DEPS_STAMP)
	@mkdir -p build
	$(NVCC) -O3 -std=c++17 -arch=$(CUDA_ARCH) -lineinfo $(INC) $(CU_NCCL) -Xcompiler -Wall,-Wextra,-fopenmp -c $< -o $@

build/libempic.a: $(OBJ) $(CU_OBJ)
	rm -f $@ && ar rcs $@ $^

bin/empic: build/main.o build/libempic.a
	@mkdir -p bin
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS)

# This checkout's empic-diag beside its bin/empic: the diag/ package of the checkout the
# script lies in, whatever `empic-diag` another checkout installed on the PATH.
bin/empic-diag:
	@mkdir -p bin
	@printf '%s\n' '#!/bin/sh' \
	  '# empic-diag of the checkout this script lies in (made by make)' \
	  'root=$$(cd "$$(dirname "$$0")/.." && pwd)' \
	  'exec python3 -c "import sys; sys.path.insert(0, sys.argv.pop(1)); from diag.__main__ import main; sys.exit(main(prog=\"empic-diag\"))" "$$root" "$$@"' \
	  > $@ && chmod +x $@

bin/test_%: tests/test_%.c tests/testutil.h build/libempic.a
	@mkdir -p bin
	$(CC) $(CFLAGS) $(PKG_CFLAGS) $(INC) -Itests $< build/libempic.a -o $@ $(LIBS) -lcunit

# The floor of the collisions' cost on a GPU (tools/collide-floor.cu; docs/performance.md).
bin/collide-floor: tools/collide-floor.cu $(HDRS)
	@mkdir -p bin
	$(NVCC) -O3 -std=c++17 -arch=$(CUDA_ARCH) -Iinclude -Xcompiler -Wall,-Wextra $< -o $@

run: bin/empic diag-install
	bin/empic --overwrite decks/default.cfg
	-python3 -m diag summary out-default

test: test-c test-py

test-c: bin/empic $(TESTS:tests/%.c=bin/%)
	@set -e; for t in $(TESTS:tests/%.c=bin/%); do echo "== $$t"; OMP_NUM_THREADS=2 $$t; done
	tests/decks.sh
	tests/restart.sh
	tests/hostile.sh
	tests/stop.sh

test-py: bin/empic bin/empic-diag diag-install
	python3 -m pytest -q tests

# `make sanitize`: the CPU build (CUDA=0) with AddressSanitizer and UBSan in build-san/ and
# bin-san/, then the CPU CUnit tests and the shell tests under them.
SAN_CFLAGS := $(filter-out -O3 -DEMPIC_CUDA,$(CFLAGS)) -O1 -fno-omit-frame-pointer \
              -fsanitize=address,undefined -fno-sanitize-recover=undefined
SAN_LIBS   = $(PKG_LIBS) -lfftw3 -lstdc++ -lm
SAN_TESTS  := $(filter-out tests/test_gpu%.c,$(TESTS))
SAN_ENV    := OMP_NUM_THREADS=2 UBSAN_OPTIONS=print_stacktrace=1 \
              LSAN_OPTIONS=suppressions=$(CURDIR)/tools/lsan.supp

build-san/%.o: src/%.c $(HDRS) | $(DEPS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(SAN_CFLAGS) $(PKG_CFLAGS) $(INC) -c $< -o $@

build-san/libempic.a: $(SRC:src/%.c=build-san/%.o)
	rm -f $@ && ar rcs $@ $^

bin-san/empic: build-san/main.o build-san/libempic.a
	@mkdir -p bin-san
	$(CC) $(SAN_CFLAGS) $^ -o $@ $(SAN_LIBS)

bin-san/test_%: tests/test_%.c tests/testutil.h build-san/libempic.a
	@mkdir -p bin-san
	$(CC) $(SAN_CFLAGS) $(PKG_CFLAGS) $(INC) -Itests $< build-san/libempic.a -o $@ $(SAN_LIBS) -lcunit

sanitize: bin-san/empic $(SAN_TESTS:tests/%.c=bin-san/%)
	@set -e; for t in $(SAN_TESTS:tests/%.c=bin-san/%); do echo "== $$t"; $(SAN_ENV) $$t; done
	$(SAN_ENV) EMPIC=bin-san/empic tests/decks.sh
	$(SAN_ENV) EMPIC=bin-san/empic tests/restart.sh
	$(SAN_ENV) EMPIC=bin-san/empic tests/hostile.sh

# `make fuzz`: libFuzzer (clang, installed by tools/install-deps when missing), FUZZ_TIME
# seconds per target: fuzz_deck feeds bytes as a deck file to deck_load (seeded with the
# example decks); fuzz_ckpt feeds damaged checkpoint files to the restart reader (seeded with
# the checkpoints of two small runs, tools/fuzz_ckpt*.cfg). `make fuzz-smoke` runs each for
# FUZZ_SMOKE seconds (make test).
FUZZ_CC    ?= clang
FUZZ_TIME  ?= 60
FUZZ_SMOKE ?= 20
FUZZ_FLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -fsanitize=fuzzer,address,undefined $(INC)
FUZZ_SRC   := $(wildcard src/deck/*.c) src/state/formula.c src/state/profile.c \
              src/state/lasers.c src/state/elements.c src/util.c
FUZZ_ENV   := LSAN_OPTIONS=suppressions=$(CURDIR)/tools/lsan.supp OMP_NUM_THREADS=1 \
              EMPIC_MEMORY_LIMIT=1e9
FUZZ_RUN   := -timeout=30 -close_fd_mask=3 -print_final_stats=1 -artifact_prefix=build-fuzz/

bin-fuzz/fuzz_deck: tools/fuzz_deck.c $(FUZZ_SRC) $(HDRS) | $(DEPS_STAMP)
	@command -v $(FUZZ_CC) >/dev/null 2>&1 || tools/install-deps clang
	@mkdir -p bin-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -fopenmp $(shell pkg-config --cflags libconfig muparser) \
	  tools/fuzz_deck.c $(FUZZ_SRC) -o $@ $(shell pkg-config --libs libconfig muparser) \
	  -lstdc++ -lm

bin-fuzz/fuzz_ckpt: tools/fuzz_ckpt.c $(SRC) $(HDRS) | $(DEPS_STAMP)
	@command -v $(FUZZ_CC) >/dev/null 2>&1 || tools/install-deps clang
	@mkdir -p bin-fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -fopenmp $(PKG_CFLAGS) tools/fuzz_ckpt.c $(SRC) -o $@ $(SAN_LIBS)

build-fuzz/.corpus: bin/empic tools/fuzz_ckpt.cfg tools/fuzz_ckpt_open.cfg decks/*.cfg
	@rm -rf build-fuzz/corpus build-fuzz/ckpt-corpus build-fuzz/seed
	@mkdir -p build-fuzz/corpus build-fuzz/ckpt-corpus
	cp decks/*.cfg decks/bench/*.cfg build-fuzz/corpus/
	for c in tools/fuzz_ckpt.cfg tools/fuzz_ckpt_open.cfg; do \
	  bin/empic --quiet --output build-fuzz/seed/$$(basename $$c .cfg) $$c || exit 1; \
	  for f in build-fuzz/seed/$$(basename $$c .cfg)/checkpoint/*.h5; do \
	    cp $$f build-fuzz/ckpt-corpus/$$(basename $$c .cfg)-$$(basename $$f); done; done
	@touch $@

fuzz fuzz-smoke: bin-fuzz/fuzz_deck bin-fuzz/fuzz_ckpt build-fuzz/.corpus
	$(FUZZ_ENV) bin-fuzz/fuzz_deck -max_total_time=$(if $(filter fuzz,$@),$(FUZZ_TIME),$(FUZZ_SMOKE)) \
	  $(FUZZ_RUN) -dict=tools/fuzz_deck.dict build-fuzz/corpus
	$(FUZZ_ENV) bin-fuzz/fuzz_ckpt -max_total_time=$(if $(filter fuzz,$@),$(FUZZ_TIME),$(FUZZ_SMOKE)) \
	  $(FUZZ_RUN) build-fuzz/ckpt-corpus

clean:
	rm -rf build bin build-san bin-san build-fuzz bin-fuzz
