# tests/suites.sh - the suites tests/run runs, in order: suite NAME BUDGET_SECONDS COMMAND...
# Each area registers its suites here. Binaries are built by `make check TESTS=`.
suite unit-topology 60 tests/unit/test_topology
suite unit-kernels 120 tests/unit/test_kernels
suite unit-gen-colls 300 tests/unit/test_gen_colls
suite unit-validate 60 tests/unit/test_validate
suite unit-sched-io 60 tests/unit/test_sched_io
suite unit-gen-allreduce 300 tests/unit/test_gen_allreduce
suite unit-torus-algos 400 tests/unit/test_torus_algos
suite unit-cost 120 tests/unit/test_cost
suite unit-select 120 tests/unit/test_select
suite unit-fuse 60 tests/unit/test_fuse
suite unit-kernels-portable 120 tests/unit/test_kernels_portable
suite unit-transport 180 tests/unit/test_transport
suite sched 600 tests/sched/test_sched
