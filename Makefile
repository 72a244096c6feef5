# scaletune — one non-recursive Makefile, pkg-config for every dependency.
#   make              libscaletune.a, libscaletune.so, the scaletune CLI and the other programs
#   make test         every test binary; ends with "N passed, N failed", non-zero on failure
#   make asan         the same tests built with ASan + UBSan (in build/asan)
#   make valgrind     the tests under valgrind (memcheck, definite leaks are errors)
#   make format-check clang-format --dry-run over our sources
#   make bench-*      benchmarks (see each module's section); make bench runs them all
#   make cuda         the CUDA trainer when nvcc is present (not part of `all`)
#   make install PREFIX=/usr/local
NAME    := scaletune
BUILD   ?= build
NVCC    ?= nvcc
OPT     ?= -O2 -g
PREFIX  ?= /usr/local
WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wformat=2
PKGS    := gsl nlopt sqlite3 libcurl openblas lapacke jansson yaml-0.1
CFLAGS  += -std=c11 $(OPT) $(WARN) -fPIC -pthread
CPPFLAGS+= -I. -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DST_HAVE_CURL \
           $(shell pkg-config --cflags $(PKGS))
# -lgslcblas dropped so GSL's cblas_* calls bind to OpenBLAS
LDLIBS  += $(filter-out -lgslcblas,$(shell pkg-config --libs $(PKGS))) -lm -lpthread
ifdef SAN
CFLAGS  += -fsanitize=$(SAN) -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SAN)
endif

SOVER   := 0
LIBVER  := 0.1.0
LIB_DIRS:= common carbs fit runner study report trainer
# files named *_main.c hold a program's main() and stay out of the library
LIB_SRC := $(filter-out %_main.c,$(wildcard $(addsuffix /*.c,$(LIB_DIRS))))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_SRC := $(wildcard cli/*.c)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TESTS   := $(patsubst %.c,$(BUILD)/%,$(wildcard tests/*/test_*.c))
STATIC  := $(BUILD)/lib$(NAME).a
SHARED  := $(BUILD)/lib$(NAME).so
# programs besides the CLI; module sections below append to it
PROGRAMS:= $(BUILD)/$(NAME)
# helper programs the tests need (fake trainers, fixtures); module sections append to it
TEST_PROGRAMS :=

all: $(STATIC) $(SHARED) programs

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

$(STATIC): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

# common/scaletune.map: only the module-prefixed public API is exported (issue 21)
$(SHARED): $(LIB_OBJ) common/scaletune.map
	$(CC) $(LDFLAGS) -shared -Wl,-soname,lib$(NAME).so.$(SOVER) \
	  -Wl,--version-script=common/scaletune.map $(LIB_OBJ) $(LDLIBS) -o $@.$(LIBVER)
	ln -sf lib$(NAME).so.$(LIBVER) $@.$(SOVER)
	ln -sf lib$(NAME).so.$(LIBVER) $@

$(BUILD)/$(NAME): $(CLI_OBJ) $(STATIC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# Each module is also archived alone (build/mod/lib<module>.a), so that a test of one module
# links only that module and what it depends on (DEPS_<module>), and a half-written file in
# another module does not stop it. `make test-<module>` builds and runs one module's tests.
DEPS_carbs  :=
DEPS_fit    :=
DEPS_trainer:=
DEPS_runner := carbs fit
DEPS_report := study runner carbs fit
DEPS_study  := runner carbs fit
DEPS_common :=
mod_objs = $(patsubst %.c,$(BUILD)/%.o,$(filter-out %_main.c,$(wildcard $(1)/*.c)))
mod_libs = $(foreach d,$(1) $(DEPS_$(1)) $(if $(filter common,$(1)),,common),$(BUILD)/mod/lib$(d).a)
define MODULE_rules
$(BUILD)/mod/lib$(1).a: $(call mod_objs,$(1))
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
$(BUILD)/tests/$(1)/%: $(BUILD)/tests/$(1)/%.o $(call mod_libs,$(1))
	$$(CC) $$(LDFLAGS) $$^ $$(LDLIBS) -o $$@
test-$(1): $(patsubst %.c,$(BUILD)/%,$(wildcard tests/$(1)/test_*.c)) $$(TEST_PROGRAMS)
	@tests/run-tests.sh $(patsubst %.c,$(BUILD)/%,$(wildcard tests/$(1)/test_*.c))
endef

# ---- carbs ---------------------------------------------------------------------------------
# one BLAS thread: at n = 1000 two OpenBLAS threads on this 2-core machine made suggest 2-3x
# slower (spinning threads), see docs/algorithms/carbs.md
bench-carbs: $(BUILD)/bench/bench_carbs
	OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} $(BUILD)/bench/bench_carbs
# issue 22 item 6: how often Bayesian suggestions sit at a bound (docs/algorithms/carbs.md)
$(BUILD)/bench/bench_bounds: $(BUILD)/bench/bench_bounds.o $(BUILD)/bench/sim.o $(STATIC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
bench-bounds: $(BUILD)/bench/bench_bounds
	OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} $(BUILD)/bench/bench_bounds --evals 100
# issue 22: Optuna's samplers (scripts/install-deps --bench) in the same run as scaletune, on a
# categorical Branin and on suggest latency; without Optuna they exit 1 (recorded by make bench)
bench-categorical: all
	PYTHONPATH=bindings/python OPENBLAS_NUM_THREADS=1 $(BENCH_PY) bench/bench_categorical.py
bench-ask-latency: all
	PYTHONPATH=bindings/python OPENBLAS_NUM_THREADS=1 $(BENCH_PY) bench/bench_ask_latency.py
.PHONY: bench-bounds bench-categorical bench-ask-latency

# ---- fit -----------------------------------------------------------------------------------
# the scipy peer (bench/fit_scipy_peer.py) runs in the same process when $(BENCH_PY) has scipy
bench-fit: $(BUILD)/bench/bench_fit
	FIT_PEER_PYTHON=$(BENCH_PY) $(BUILD)/bench/bench_fit
# the extrapolation tests run bench/'s simulator in-process (its known truth and oracle)
$(BUILD)/tests/fit/test_fit_extrapolate: $(BUILD)/bench/sim.o
$(BUILD)/tests/fit/test_fit_extrapolate_sweeps: $(BUILD)/bench/sim.o
$(BUILD)/tests/study/test_study: $(BUILD)/bench/sim.o

# ---- trainer -------------------------------------------------------------------------------
# The hot loops want -O3 (vectorised element loops; gpt_int.h adds AVX2 clones at run time).
$(BUILD)/trainer/%.o: CFLAGS += -O3 -fno-math-errno
# the GP cross-kernel loops: vectorised (carbs/gp_cross.c)
$(BUILD)/carbs/gp_cross.o: CFLAGS += -O3 -fno-math-errno -fno-trapping-math
PROGRAMS += $(BUILD)/scaletune-train
# linked from the trainer's own archives, so that it builds even when another module does not
$(BUILD)/scaletune-train: $(BUILD)/trainer/train_main.o $(BUILD)/mod/libtrainer.a \
                          $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
# tests/trainer/test_trainer_cli runs the program
test-trainer: $(BUILD)/scaletune-train
# make cuda: the CUDA trainer (build/scaletune-train-cuda) and its parity test, when nvcc exists;
# sm_75 and newer (nvcc 13 dropped older targets). Not part of `all`.
CUDA_HOME  ?= /usr/local/cuda
CUDA_GENCODE ?= -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 \
                -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
CUDA_LIBS  := -L$(CUDA_HOME)/lib64 -lcublas -lcudart -lstdc++
NVCC_PATH  := $(shell command -v $(NVCC) 2>/dev/null)
cuda:
ifeq ($(NVCC_PATH),)
	@echo "✗ nvcc not found ($(NVCC)): the CUDA trainer is not built (CPU trainer: make)"
else
	@echo "✓ nvcc: $(NVCC_PATH)"
	$(MAKE) --no-print-directory $(BUILD)/scaletune-train-cuda \
	  $(BUILD)/tests/trainer/test_trainer_cuda_gpu
	@tests/run-tests.sh $(BUILD)/tests/trainer/test_trainer_cuda_gpu
endif
$(BUILD)/cuda/gpt_cuda.o: trainer/gpt_cuda.cu trainer/gpt.h
	@mkdir -p $(@D)
	$(NVCC) -O3 -std=c++17 -I. $(CUDA_GENCODE) -Xcompiler -fPIC -c $< -o $@
$(BUILD)/cuda/train_main.o: trainer/train_main.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DGPT_WITH_CUDA -c $< -o $@
$(BUILD)/cuda/test_trainer_cuda.o: tests/trainer/test_trainer_cuda.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -DGPT_WITH_CUDA -c $< -o $@
$(BUILD)/scaletune-train-cuda: $(BUILD)/cuda/train_main.o $(BUILD)/cuda/gpt_cuda.o $(STATIC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) $(CUDA_LIBS) -o $@
$(BUILD)/tests/trainer/test_trainer_cuda_gpu: $(BUILD)/cuda/test_trainer_cuda.o \
    $(BUILD)/cuda/gpt_cuda.o $(BUILD)/mod/libtrainer.a $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) $(CUDA_LIBS) -o $@
.PHONY: cuda
# The PyTorch baseline (bench/pytorch_gpt.py) runs in the same command when Debian's
# python3-torch is installed; the measured ratios are then printed as trainer.vs_pytorch_measured.
bench-trainer: $(BUILD)/bench/bench_trainer
	@$(BUILD)/bench/bench_trainer | tee $(BUILD)/bench/trainer.out
	@/usr/bin/python3 bench/pytorch_gpt.py 2 | tee $(BUILD)/bench/pytorch.out
	@awk '/^BENCH trainer.tokens_per_s/ && /threads=2/ {split($$3,a,"="); c[a[2]]=$$5} \
	  /^BENCH trainer.pytorch_tokens_per_s/ {split($$3,a,"="); p[a[2]]=$$5} \
	  END {for (m in p) if (m in c) printf "BENCH trainer.vs_pytorch_measured model=%s threads=2 %.2f\n", m, c[m]/p[m]}' \
	  $(BUILD)/bench/trainer.out $(BUILD)/bench/pytorch.out | sort
$(BUILD)/bench/bench_trainer: $(BUILD)/bench/bench_trainer.o $(BUILD)/mod/libtrainer.a \
                              $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

# make bench-curves: tiny-GPT runs (curves stored in build/bench/curves.tsv, reused; delete it or
# pass BENCH_CURVES_FLAGS=--retrain to train again), each run's final loss predicted from its
# first 30% of steps by the curve law of fit/curve.h, by a plain power law, and borrowed from the
# other runs' curves (fit_curve_borrow; docs/benchmarks.md section 6)
$(BUILD)/bench/bench_curves: $(BUILD)/bench/bench_curves.o $(BUILD)/mod/libfit.a \
                             $(BUILD)/mod/libtrainer.a $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
bench-curves: $(BUILD)/bench/bench_curves
	@test -r data/kjv/train.txt || scripts/prepare-data
	OPENBLAS_NUM_THREADS=1 $(BUILD)/bench/bench_curves --out $(BUILD)/bench/curves.tsv \
	  $(BENCH_CURVES_FLAGS)
.PHONY: bench-curves

# ---- runner --------------------------------------------------------------------------------
# scaletune-supervise: the local backend's per-attempt supervisor, started with posix_spawn by
# the CLI's controller (runner_options.supervisor); libc only, so that it starts fast
PROGRAMS += $(BUILD)/scaletune-supervise
$(BUILD)/scaletune-supervise: $(BUILD)/runner/supervise_main.o $(BUILD)/runner/supervise.o
	$(CC) $(LDFLAGS) $^ -o $@
test-runner: $(BUILD)/scaletune-supervise
# tests/runner/fake_trainer: a trainer told by its arguments how to behave (tests only)
TEST_PROGRAMS += $(BUILD)/tests/runner/fake_trainer
# (test-runner is defined above, before TEST_PROGRAMS grows: name the helper here too)
test-runner: $(BUILD)/tests/runner/fake_trainer
$(BUILD)/tests/runner/fake_trainer: $(BUILD)/tests/runner/fake_trainer.o
	$(CC) $(LDFLAGS) $^ -lm -o $@
bench-runner: $(BUILD)/bench/bench_runner $(BUILD)/tests/runner/fake_trainer
	$(BUILD)/bench/bench_runner $(BUILD)/tests/runner/fake_trainer
# the controller SIGKILLed every 2-5 s through a 10,000-run sweep with faults: integrity, exactly
# once, runs/min, controller CPU per run, resume time (bench/soak.sh; SOAK_RUNS=N for a shorter one)
bench-soak: all $(BUILD)/tests/runner/fake_trainer
	bench/soak.sh $(BUILD)/$(NAME) $(BUILD)/tests/runner/fake_trainer $(BUILD)/bench/soak
.PHONY: bench-soak
# what the deterministic release costs in idle slots (docs/config.md, "deterministic")
bench-release: $(BUILD)/bench/bench_release $(BUILD)/tests/runner/fake_trainer
	OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} $(BUILD)/bench/bench_release \
	  $(BUILD)/tests/runner/fake_trainer $(BENCH_RELEASE_ARGS)
# libFuzzer targets (clang), each run briefly: make fuzz [FUZZ_SECONDS=10]
FUZZ_SECONDS ?= 10
FUZZ_BUILD   := build/fuzz
FUZZ_CFLAGS  := -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                $(CPPFLAGS)
FUZZ_LIBSRC  := $(filter-out %_main.c,$(wildcard runner/*.c carbs/*.c common/*.c)) \
                $(wildcard fit/*.c)
$(FUZZ_BUILD)/%: fuzz/%.c $(FUZZ_LIBSRC) $(wildcard runner/*.h)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) $< $(FUZZ_LIBSRC) $(LDLIBS) -o $@
fuzz: $(FUZZ_BUILD)/fuzz_metrics $(FUZZ_BUILD)/fuzz_config $(FUZZ_BUILD)/fuzz_carbs_import \
      $(FUZZ_BUILD)/fuzz_csv $(FUZZ_BUILD)/fuzz_store
	@mkdir -p $(FUZZ_BUILD)/corpus_metrics $(FUZZ_BUILD)/corpus_config $(FUZZ_BUILD)/corpus_carbs \
	  $(FUZZ_BUILD)/corpus_csv $(FUZZ_BUILD)/corpus_store
	$(FUZZ_BUILD)/fuzz_metrics -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	  $(FUZZ_BUILD)/corpus_metrics fuzz/corpus/metrics
	$(FUZZ_BUILD)/fuzz_config -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
	  $(FUZZ_BUILD)/corpus_config fuzz/corpus/config
	$(FUZZ_BUILD)/fuzz_carbs_import -max_total_time=$(FUZZ_SECONDS) -max_len=8192 \
	  $(FUZZ_BUILD)/corpus_carbs fuzz/corpus/carbs_state
	$(FUZZ_BUILD)/fuzz_csv -max_total_time=$(FUZZ_SECONDS) -max_len=4096 \
	  $(FUZZ_BUILD)/corpus_csv fuzz/corpus/csv
	$(FUZZ_BUILD)/fuzz_store -max_total_time=$(FUZZ_SECONDS) -max_len=65536 \
	  $(FUZZ_BUILD)/corpus_store fuzz/corpus/store
.PHONY: fuzz

# ---- bindings ------------------------------------------------------------------------------
# The Python binding (bindings/python/scaletune: ctypes over $(SHARED), standard library only),
# the C example (examples/c/, public headers only), the pkg-config file and the man page.
# tests/python/test_python_run runs the Python tests (tests/python/test_*.py) inside `make test`;
# `make test-python` runs them alone. `make install` also installs scaletune.pc, scaletune(1)
# and the Python module (PREFIX/lib/python3/dist-packages/scaletune).
EXAMPLES_C := $(patsubst %.c,$(BUILD)/%,$(wildcard examples/c/*.c))
all: $(EXAMPLES_C)
$(BUILD)/examples/c/%: $(BUILD)/examples/c/%.o $(STATIC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
# sanitizer builds: python3 itself is not instrumented, so it must preload the runtimes
PY_PRELOAD := $(strip $(if $(findstring address,$(SAN)),$(shell $(CC) -print-file-name=libasan.so)) \
              $(if $(findstring undefined,$(SAN)),$(shell $(CC) -print-file-name=libubsan.so)))
$(BUILD)/tests/python/test_python_run.o: CPPFLAGS += -DPY_BUILD_DIR='"$(BUILD)"' \
    $(if $(PY_PRELOAD),-DPY_PRELOAD='"$(PY_PRELOAD)"')
$(BUILD)/tests/python/test_python_run: $(BUILD)/tests/python/test_python_run.o
	$(CC) $(LDFLAGS) $^ -o $@
test-python: all $(BUILD)/tests/python/test_python_run
	@tests/run-tests.sh $(BUILD)/tests/python/test_python_run
# (=, not :=: the report section below adds PLplot to LDLIBS)
PC_REQUIRES = $(PKGS) $(if $(filter -lplplot%,$(LDLIBS)),plplot)
PYDIR ?= $(PREFIX)/lib/python3/dist-packages
install: install-bindings
install-bindings: all
	install -d $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PYDIR)/scaletune
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(LIBVER)|' -e 's|@REQUIRES@|$(PC_REQUIRES)|' \
	  scaletune.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/$(NAME).pc
	chmod 644 $(DESTDIR)$(PREFIX)/lib/pkgconfig/$(NAME).pc
	install -m 644 docs/scaletune.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 bindings/python/scaletune/*.py $(DESTDIR)$(PYDIR)/scaletune/
.PHONY: test-python install-bindings

# ---- slurm ---------------------------------------------------------------------------------
# The Slurm backends against a real one-node cluster on 127.0.0.1 (scripts/slurm-localhost starts
# munged, slurmctld, slurmd and two slurmrestd; needs root and scripts/install-deps --slurm).
# tests/slurm/slurm_*.c are not test_*.c, so `make test` leaves them out; `make test-slurm` starts
# the cluster, runs them, stops it and ends with "N passed, N failed".
SLURM_TESTS := $(patsubst %.c,$(BUILD)/%,$(wildcard tests/slurm/slurm_*.c))
SLURM_ENV    = eval "$$(scripts/slurm-localhost env)" && export ST_SLURM_SCRIPT=scripts/slurm-localhost
$(BUILD)/tests/slurm/%: $(BUILD)/tests/slurm/%.o $(call mod_libs,runner)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
test-slurm: $(SLURM_TESTS) $(BUILD)/tests/runner/fake_trainer
	@scripts/slurm-localhost start || { echo "0 passed, 1 failed"; exit 1; }
	@$(SLURM_ENV) && TEST_JOBS=1 tests/run-tests.sh $(SLURM_TESTS); rc=$$?; scripts/slurm-localhost stop; exit $$rc
bench-slurm: $(BUILD)/bench/bench_slurm $(BUILD)/tests/runner/fake_trainer
	@scripts/slurm-localhost start
	@$(SLURM_ENV) && $(BUILD)/bench/bench_slurm $(BUILD)/tests/runner/fake_trainer; rc=$$?; \
	  scripts/slurm-localhost stop; exit $$rc
$(BUILD)/bench/bench_slurm: $(BUILD)/bench/bench_slurm.o $(call mod_libs,runner)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
.PHONY: test-slurm bench-slurm

# ---- demo ----------------------------------------------------------------------------------
# The README's main job (examples/tiny-gpt-scaling/run.sh): deps (when root), the corpus, the
# build, then sweep -> fit -> extrapolate -> large run at 10x -> report. `demo` took 21
# minutes on 2 quiet cores (2026-11-29; the sweep 11 of them); `demo-quick` (what CI runs) is
# a smaller study in under 3 minutes.
# Results: docs/results.md.
DEMO_QUICK_ENV := E2E_DIR=build/tiny-gpt-scaling-quick E2E_RUNS=24 E2E_DMODEL_MIN=16 \
                  E2E_DMODEL_MAX=48 E2E_TOKENS_MIN=2e4 E2E_TOKENS_MAX=1.5e5 E2E_BOOT=100 \
                  E2E_CAP=3e10 E2E_ALLOW_UNSAFE=1
.PHONY: demo demo-quick demo-deps
demo-deps:
	@if [ "$$(id -u)" = 0 ]; then scripts/install-deps --all; \
	 else echo "demo: not root, assuming the dependencies are installed (scripts/install-deps --all)"; fi
	scripts/prepare-data
demo: demo-deps
	$(MAKE) -j2 all
	examples/tiny-gpt-scaling/run.sh
demo-quick: demo-deps
	$(MAKE) -j2 all
	$(DEMO_QUICK_ENV) examples/tiny-gpt-scaling/run.sh

# ---- report --------------------------------------------------------------------------------
# Figures are drawn by PLplot (svg device); only report/plot.c includes <plplot.h>.
PLPLOT_CFLAGS := $(shell pkg-config --cflags plplot)
LDLIBS  += $(shell pkg-config --libs plplot)
$(BUILD)/report/plot.o: CPPFLAGS += $(PLPLOT_CFLAGS)
# tests/report/ runs small sweeps of the simulated trainer
test-report: $(BUILD)/bench/llmsim/llmsim

# ---- bench ---------------------------------------------------------------------------------
# bench/sim.c is the simulated LLM-training world (docs/benchmarks.md); llmsim speaks the metrics
# protocol with it, and the tests of other modules may launch it, so `make test` builds it.
$(BUILD)/bench/%: $(BUILD)/bench/%.o $(STATIC)
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/bench/llmsim/llmsim: $(BUILD)/bench/llmsim/llmsim_main.o $(BUILD)/bench/sim.o \
                       $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
TEST_PROGRAMS += $(BUILD)/bench/llmsim/llmsim
# tests/bench/ is not a library folder: its test links bench/sim.o and common/ explicitly (it is
# already in TESTS through the tests/*/test_*.c wildcard, so `make test` runs it).
$(BUILD)/tests/bench/test_bench_sim: $(BUILD)/tests/bench/test_bench_sim.o $(BUILD)/bench/sim.o \
                                     $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
# the comparisons link only the modules they use, so a half-written file elsewhere cannot stop them
$(BUILD)/bench/compare: $(BUILD)/bench/compare.o $(BUILD)/bench/compare_problems.o \
                        $(BUILD)/bench/compare_json.o $(BUILD)/bench/sim.o $(BUILD)/mod/libstudy.a \
                        $(BUILD)/mod/librunner.a $(BUILD)/mod/libcarbs.a \
                        $(BUILD)/mod/libfit.a $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
$(BUILD)/bench/compare_report: $(BUILD)/bench/compare_report.o $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
# study mode offline (docs/algorithms/study-mode.md, "Measured"): study_propose in-process on
# bench/sim.h's worlds against random search of the same size; WORLDS=1-3 RUNS=50 by default
$(BUILD)/bench/bench_study_sim: $(BUILD)/bench/bench_study_sim.o $(BUILD)/bench/sim.o \
                                $(BUILD)/mod/libstudy.a $(BUILD)/mod/librunner.a \
                                $(BUILD)/mod/libcarbs.a $(BUILD)/mod/libfit.a $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
bench-study-sim: $(BUILD)/bench/bench_study_sim
	OPENBLAS_NUM_THREADS=1 $(BUILD)/bench/bench_study_sim --worlds $(or $(WORLDS),1-3) \
	  --runs $(or $(RUNS),50)
.PHONY: bench-study-sim
# the trainer's time at a far too high learning rate against a healthy one (docs/trainer.md)
bench-trainer-high-lr: $(BUILD)/scaletune-train
	@sh bench/trainer_high_lr.sh
.PHONY: bench-trainer-high-lr
# how often a suggestion is over budget.max_cost_per_run, on llmsim (docs/config.md)
bench-costcap: all $(BUILD)/bench/llmsim/llmsim
	OPENBLAS_NUM_THREADS=$${OPENBLAS_NUM_THREADS:-1} sh bench/costcap.sh
.PHONY: bench-costcap
BENCH_PY ?= /usr/bin/python3
BENCH_COMPARE_FLAGS ?=
bench-compare: $(BUILD)/bench/compare
	OPENBLAS_NUM_THREADS=1 $(BUILD)/bench/compare --python $(BENCH_PY) \
	  --out $(BUILD)/bench/compare.json $(BENCH_COMPARE_FLAGS)
# make bench: every module's benchmark (a missing or failing one is recorded, not fatal), then the
# comparisons; bench/results/latest.json (with `ratios`) and latest.md gather the numbers.
BENCH_SUITES := bench-carbs bench-fit bench-trainer bench-runner bench-bounds bench-categorical \
                bench-ask-latency
bench: $(BUILD)/bench/compare $(BUILD)/bench/compare_report
	@rm -rf $(BUILD)/bench/logs; mkdir -p $(BUILD)/bench/logs bench/results
	@for b in $(BENCH_SUITES); do \
	  echo "== $$b"; t0=$$(date +%s.%N); \
	  { $(MAKE) --no-print-directory $$b; echo $$? > $(BUILD)/bench/logs/$$b.rc; } 2>&1 \
	    | tee $(BUILD)/bench/logs/$$b.log; \
	  if [ "$$(cat $(BUILD)/bench/logs/$$b.rc)" = 0 ]; then st=ok; else st=failed; fi; \
	  echo "$$st $$(awk "BEGIN{print $$(date +%s.%N) - $$t0}")" > $(BUILD)/bench/logs/$$b.status; \
	  rm -f $(BUILD)/bench/logs/$$b.rc; \
	done
	@echo "== bench-compare"
	$(MAKE) --no-print-directory bench-compare
	$(BUILD)/bench/compare_report --compare $(BUILD)/bench/compare.json \
	  --logs $(BUILD)/bench/logs --json bench/results/latest.json --md bench/results/latest.md
	@grep -A40 '^## Ratios' bench/results/latest.md
# make bench-extrapolate: `scaletune extrapolate` on users' sweeps of llmsim in worlds 1..SEEDS
# (docs/benchmarks.md, "Extrapolation on users' sweeps"), written three ways (the sweep's own N
# and tokens; nanoGPT's shape and max_iters; Hugging Face Trainer's names); `make
# bench-extrapolate SEEDS=3` is the
# quick variant; BENCH_XP_FLAGS=--pass-config also gives extrapolate the sweep file. Targets
# print PASS/FAIL and never fail the build.
$(BUILD)/bench/bench_extrapolate: $(BUILD)/bench/bench_extrapolate.o $(BUILD)/bench/bench_extrapolate_sweep.o \
                                  $(BUILD)/bench/sim.o \
                                  $(BUILD)/mod/libcommon.a
	$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@
bench-extrapolate: $(BUILD)/bench/bench_extrapolate $(BUILD)/$(NAME) $(BUILD)/bench/llmsim/llmsim
	OPENBLAS_NUM_THREADS=1 $(BUILD)/bench/bench_extrapolate --seeds $(if $(SEEDS),$(SEEDS),20) \
	  --scaletune $(BUILD)/$(NAME) --llmsim $(BUILD)/bench/llmsim/llmsim \
	  --work $(BUILD)/bench/extrapolate --out $(BUILD)/bench/extrapolate.json $(BENCH_XP_FLAGS)
	OPENBLAS_NUM_THREADS=1 $(BUILD)/bench/bench_extrapolate --seeds $(if $(SEEDS),$(SEEDS),20) \
	  --scaletune $(BUILD)/$(NAME) --llmsim $(BUILD)/bench/llmsim/llmsim --style nanogpt \
	  --work $(BUILD)/bench/extrapolate-nanogpt --out $(BUILD)/bench/extrapolate-nanogpt.json \
	  $(BENCH_XP_FLAGS)
	OPENBLAS_NUM_THREADS=1 $(BUILD)/bench/bench_extrapolate --seeds $(if $(SEEDS),$(SEEDS),20) \
	  --scaletune $(BUILD)/$(NAME) --llmsim $(BUILD)/bench/llmsim/llmsim --style hf \
	  --work $(BUILD)/bench/extrapolate-hf --out $(BUILD)/bench/extrapolate-hf.json \
	  $(BENCH_XP_FLAGS)
.PHONY: bench-extrapolate
# make bench-study: study mode against CARBS and random search on the same worlds (issue 16;
# docs/benchmarks.md, "Sweeps designed for the large run"); SEEDS, STUDY_RUNS, OTHER_RUNS, MODES,
# FIRST_SEED, ARMS (MODE:RUNS[:COST] each, e.g. "study:120:1.5e17 best:300:1.5e17": equal sweep cost)
bench-study: $(BUILD)/bench/bench_extrapolate $(BUILD)/$(NAME) $(BUILD)/bench/llmsim/llmsim
	sh bench/study.sh
.PHONY: bench-study
test-bench: $(BUILD)/tests/bench/test_bench_sim $(BUILD)/bench/llmsim/llmsim
	@tests/run-tests.sh $(BUILD)/tests/bench/test_bench_sim
.PHONY: test-bench bench-compare bench

# --------------------------------------------------------------------------------------------
# expanded here, after every section has added to TEST_PROGRAMS and DEPS_*
$(foreach m,$(LIB_DIRS),$(eval $(call MODULE_rules,$(m))))

programs: $(PROGRAMS)

test: all $(TESTS) $(TEST_PROGRAMS)
	@tests/run-tests.sh $(TESTS)

valgrind: all $(TESTS) $(TEST_PROGRAMS)
	@OPENBLAS_NUM_THREADS=1 ST_TEST_QUICK=1 TEST_WRAP="valgrind -q --error-exitcode=99 \
	  --leak-check=full --errors-for-leak-kinds=definite" tests/run-tests.sh $(TESTS)

asan:
	$(MAKE) BUILD=build/asan OPT="-O1 -g" SAN=address,undefined test

SRC_ALL := $(wildcard */*.[ch] */*/*.[ch] trainer/*.cu)
format:
	clang-format -i $(SRC_ALL)
format-check:
	clang-format --dry-run -Werror $(SRC_ALL)
lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance -I. $(LIB_DIRS) cli

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/$(NAME)
	install -m 644 $(STATIC) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(SHARED).$(LIBVER) $(DESTDIR)$(PREFIX)/lib/
	ln -sf lib$(NAME).so.$(LIBVER) $(DESTDIR)$(PREFIX)/lib/lib$(NAME).so.$(SOVER)
	ln -sf lib$(NAME).so.$(LIBVER) $(DESTDIR)$(PREFIX)/lib/lib$(NAME).so
	install -m 755 $(PROGRAMS) $(DESTDIR)$(PREFIX)/bin/
	for d in common $(filter-out common,$(LIB_DIRS)); do \
	  for h in $$d/*.h; do case $$h in *_int.h) ;; *) install -D -m 644 $$h \
	    $(DESTDIR)$(PREFIX)/include/$(NAME)/$$h;; esac; done; done

clean:
	rm -rf build

PHONY_TESTS := $(addprefix test-,$(LIB_DIRS))
.PHONY: $(PHONY_TESTS) all programs test valgrind asan format format-check lint install clean \
        bench bench-carbs bench-fit bench-trainer bench-runner bench-release
.SECONDARY:
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
