# empic - 2D3V electromagnetic relativistic PIC. `make` builds bin/empic (CPU backend, plus the
# CUDA backend when nvcc is found), `make run` runs decks/default.cfg, `make test` runs the suite.
# Missing Debian/PyPI dependencies are installed by tools/install-deps on the first build.

CC      ?= gcc
MARCH   ?= native
CFLAGS  ?= -O3 -g
CFLAGS  += -fno-math-errno -fno-trapping-math -std=c11 -march=$(MARCH) -Wall -Wextra -fopenmp -Iinclude -D_GNU_SOURCE
PKGS    := hdf5 libconfig muparser
NVCC    ?= nvcc
CUDA    ?= $(if $(shell command -v $(NVCC) 2>/dev/null),1,0)
CUDA_ARCH ?= sm_90

SRC     := $(filter-out src/main.c,$(wildcard src/*.c))
OBJ     := $(SRC:src/%.c=build/%.o)
CU_SRC  := $(wildcard cuda/*.cu)
ifeq ($(CUDA),1)
CU_OBJ  := $(CU_SRC:cuda/%.cu=build/cuda_%.o)
CFLAGS  += -DEMPIC_CUDA
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC)))
CU_LIBS := -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/targets/x86_64-linux/lib -lcudart
endif
DEPS_STAMP := build/.deps
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS))
PKG_LIBS   = $(shell pkg-config --libs $(PKGS))
LIBS    = $(PKG_LIBS) -lfftw3 $(CU_LIBS) -lstdc++ -lm

TESTS   := $(wildcard tests/test_*.c)

.PHONY: all run test test-c test-py clean deps
all: bin/empic

$(DEPS_STAMP):
	@mkdir -p build
	tools/install-deps
	@touch $@
deps: $(DEPS_STAMP)

build/%.o: src/%.c $(wildcard include/*.h) src/*.h | $(DEPS_STAMP)
	@mkdir -p build
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Isrc -c $< -o $@

build/cuda_%.o: cuda/%.cu $(wildcard include/*.h cuda/*.h) src/*.h | $(DEPS_STAMP)
	@mkdir -p build
	$(NVCC) -O3 -std=c++17 -arch=$(CUDA_ARCH) -lineinfo -Iinclude -Isrc -Xcompiler -Wall,-Wextra -c $< -o $@

build/libempic.a: $(OBJ) $(CU_OBJ)
	ar rcs $@ $^

bin/empic: build/main.o build/libempic.a
	@mkdir -p bin
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS)

bin/test_%: tests/test_%.c tests/testutil.h build/libempic.a
	@mkdir -p bin
	$(CC) $(CFLAGS) $(PKG_CFLAGS) -Isrc -Itests $< build/libempic.a -o $@ $(LIBS) -lcunit

run: bin/empic
	bin/empic decks/default.cfg
	-python3 -m diag summary out-default

test: test-c test-py

test-c: bin/empic $(TESTS:tests/%.c=bin/%)
	@set -e; for t in $(TESTS:tests/%.c=bin/%); do echo "== $$t"; OMP_NUM_THREADS=2 $$t; done
	tests/decks.sh

test-py: bin/empic
	python3 -m pytest -q tests

clean:
	rm -rf build bin
