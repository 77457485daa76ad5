# tests/suites.sh - the suites tests/run runs, in order: suite NAME TIER BUDGET_SECONDS COMMAND...
# Each area registers its suites here. Binaries are built by `make check TESTS=`. Every suite
# belongs to one tier, which `tests/run TIER` runs alone:
#   quick        layers, form and links, the unit suites and sched: the whole tier in under 2 min
#   integration  multi-process jobs (mpirun, fault, simulator, benchmarks' smoke, cluster)
#   stress       long or heavy runs: scale, soak, many ranks, chaos, fuzzing, sanitizers
#   torch        the torch.distributed plugin in Debian's torch and in torch 2.x roots
# architecture: includes run one way (core -> exec -> transport -> bootstrap -> rt -> pure -> base)
suite layers quick 60 tests/arch/layers.sh
# form: clang-format clean C/C++ files; commit subjects of at most 72 characters since 6a4e782
suite form quick 60 tests/arch/form.sh
# doclinks: every path README.md and docs/ name is in the repository (or built by it)
suite doclinks quick 60 /usr/bin/python3 tests/arch/doclinks.py
suite unit-config quick 60 tests/unit/test_config
suite unit-topology quick 60 tests/unit/test_topology
suite unit-kernels quick 120 tests/unit/test_kernels
suite unit-gen-colls quick 300 tests/unit/test_gen_colls
suite unit-validate quick 60 tests/unit/test_validate
suite unit-sched-io quick 60 tests/unit/test_sched_io
suite unit-gen-allreduce quick 300 tests/unit/test_gen_allreduce
suite unit-torus-algos quick 400 tests/unit/test_torus_algos
suite unit-cost quick 120 tests/unit/test_cost
suite unit-cost-dcn quick 120 tests/unit/test_cost_dcn
suite unit-select quick 120 tests/unit/test_select
suite unit-fuse quick 60 tests/unit/test_fuse
suite unit-map quick 60 tests/unit/test_map
suite unit-step-table quick 120 tests/unit/test_step_table
suite unit-kernels-portable quick 120 tests/unit/test_kernels_portable
suite unit-bootstrap quick 60 tests/unit/test_bootstrap
suite unit-transport quick 180 tests/unit/test_transport
# the host model's placement decisions over synthetic and XML machines (hwloc)
suite unit-host quick 60 tests/unit/test_host
# the NUMA level inside a host: ranks per node from the placement, the topology level, the
# grouping of the hierarchical generators by node and the selection it leads to
suite unit-numa quick 60 tests/unit/test_numa
# the socket transport's streams: split messages exact and in order at 1-16 streams, mixed counts
suite unit-sock-streams quick 180 tests/unit/test_sock_streams
# the ofi transport over libfabric's tcp;ofi_rxm (loopback) and shm providers: tagged and RMA
# paths exact from 0 to 16 MiB, any-source, mismatches, dead peers, ofi off (docs/transports.md)
suite unit-ofi integration 120 tests/unit/test_ofi
suite unit-exec quick 180 tests/unit/test_exec
suite unit-exec-parts quick 180 tests/unit/test_exec_parts
suite sim integration 600 tests/sim/test_sim
suite sim-dcn integration 180 tests/sim/test_sim_dcn
# the link model against published TPU figures (even rings balanced, twisted all-to-all gains,
# the book's all-to-all and measured all-gathers) and selection against the simulator (small grid)
suite sim-fidelity integration 300 tests/sim/test_fidelity
suite sim-scale stress 900 tests/sim/scale.sh
suite pod-scale stress 300 tests/sim/podscale.sh
suite sched quick 600 tests/sched/test_sched
suite torch1.13 torch 900 tests/torch/run.sh
# torch 2.x in debootstrapped roots cached outside the tree (tests/torch2/root.sh): Debian 13
# trixie (torch 2.6, gcc 14, Open MPI 5.0) and Debian sid (torch 2.14, gcc 16, Open MPI 6.0); each
# budget includes making its root on a fresh machine (about 5 minutes with a near mirror); sid's
# adds torch's own reconfigure tests on gloo and tpu_dist where torch's source can be had (about
# 8 minutes; the whole suite ran past 2400 s with them at load 15-27 on the 2 cores)
suite torch2 torch 2400 tests/torch2/run.sh trixie
suite torch2.14 torch 3000 tests/torch2/run.sh sid
suite bench-smoke integration 600 tests/bench/smoke.sh
# the many-core host's script (bench/host16) from a pack in a copy of the tree, at 2 ranks, and
# tests/torch2/pip_host.sh against the pack
suite bench-host16 integration 420 tests/bench/host16.sh
# runtime (tests/mpi): every collective checked exactly under mpirun, then jobs without mpirun
suite mpi-np1 integration 90 env TPU_DIST_TIMEOUT_MS=60000 mpirun -np 1 tests/mpi/test_mpi
suite mpi-np2 integration 120 env TPU_DIST_TIMEOUT_MS=60000 mpirun -np 2 tests/mpi/test_mpi
suite mpi-np3 integration 150 env TPU_DIST_TIMEOUT_MS=60000 mpirun -np 3 tests/mpi/test_mpi
suite mpi-np4 integration 180 env TPU_DIST_TIMEOUT_MS=60000 mpirun -np 4 tests/mpi/test_mpi
suite mpi-np8 integration 300 env TPU_DIST_TIMEOUT_MS=90000 mpirun -np 8 tests/mpi/test_mpi
suite mpi-socket integration 120 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TRANSPORTS=socket mpirun -np 2 tests/mpi/test_mpi
suite mpi-socket-streams integration 150 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TRANSPORTS=socket TPU_DIST_SOCKET_NSTREAMS=4 mpirun -np 3 tests/mpi/test_mpi
# the same over the ofi transport alone: libfabric's tcp;ofi_rxm on loopback, then its shm provider
suite mpi-ofi integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TRANSPORTS=ofi TPU_DIST_OFI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo TPU_DIST_SOCKET_IFNAME=lo mpirun -np 3 tests/mpi/test_mpi
suite mpi-ofi-shm integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TRANSPORTS=ofi TPU_DIST_OFI_PROVIDER=shm mpirun -np 3 tests/mpi/test_mpi
# TLS on the socket transport: the stream tests (1-16 streams, each its own session) and the exact
# MPI suite with the PSK of the job's key (3 ranks, 2 streams), then certificates made at test time,
# a TPU_DIST_COMM_ID job in PSK mode (also under valgrind) and bad input refused on both ranks
# (tests/mpi/tls.sh); the attacks from outside: fault-hostile
suite unit-sock-streams-tls integration 180 env TPU_DIST_TLS=1 tests/unit/test_sock_streams
suite mpi-tls integration 150 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TRANSPORTS=socket TPU_DIST_TLS=1 TPU_DIST_SOCKET_NSTREAMS=2 mpirun -np 3 tests/mpi/test_mpi
suite tls integration 180 tests/mpi/tls.sh
suite mpi-torus integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TOPOLOGY=2x2 mpirun -np 4 tests/mpi/test_mpi --expect-algo allreduce=torus
# 2 slices of 2 joined by DCN: selection picks hier from 1 MiB (exact), something else below
suite mpi-slices integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TOPOLOGY=2:slices=2 mpirun -np 4 tests/mpi/test_mpi --expect-algo allreduce=hier --expect-other-below
suite commid integration 120 tests/mpi/commid.sh
suite soak stress 180 tests/mpi/soak.sh
suite shm-clean integration 120 tests/mpi/shm_clean.sh
suite valgrind stress 300 tests/mpi/valgrind.sh
suite main-job integration 180 scripts/main-job
suite mpi-check integration 120 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_CHECK=1 mpirun -np 3 tests/mpi/test_mpi
suite sched-file integration 60 tests/mpi/sched_file.sh
# TPU_DIST_BIND on the real cores: ranks' affinity, a launcher's binding left alone
suite bind integration 90 tests/mpi/bind.sh
# shm stress: many back-to-back 4-rank ring all-reduces (single-copy on, then off)
suite unit-shm-acks quick 120 tests/unit/test_shm_acks
suite stress-ring stress 480 tests/mpi/stress_ring.sh
suite stress-ring-nocma stress 480 tests/mpi/stress_ring.sh TPU_DIST_SHM_CMA=0
suite mpi-algos integration 600 tests/mpi/algos.sh
# the direct (one-shot) family forced at 16 and 32 ranks, oversubscribed (TD_FULL=1: 64)
suite mpi-direct integration 180 tests/mpi/direct.sh
# the two-level form inside a host of NUMA nodes: hier forced at 8 and 16 ranks on a synthetic
# 2 packages x 2 NUMA nodes x 4 cores host, the level logged by every rank, results exact
suite mpi-numa integration 120 tests/mpi/numa.sh
suite dead-peer integration 90 tests/mpi/dead_peer.sh
# many ranks on one host (tests/mpi/many_ranks.sh, without mpirun): 64 flat ranks, every collective
# checked exactly, direct all-to-all(-v), /dev/shm bounded; then 512 ranks on an 8x8x8 torus
suite many-ranks stress 1200 tests/mpi/many_ranks_suite.sh
# fault (tests/fault): dead peers, abort, invalid arguments, TPU_DIST_CHECK, a hostile peer beside an
# 8-rank job (replay, reflection, wrong secret, 2,000 idle connections, oversized header, slow sender),
# then beside 3-rank TLS jobs (no TLS, wrong certificate, different PSK, truncated/tampered records;
# the certificate round under valgrind)
suite fault-kill integration 300 tests/fault/kill.sh
suite fault-abort integration 60 tests/fault/jobs.sh abort
# survivors shrink (agreed failed set, explicit list, split, tori, TCP, each rank its own host, the
# coordinator dying in its shrink) and revoke; then the seeded
# chaos trials (random kills in random collective mixes; seed printed, rerun with TD_CHAOS_SEED)
suite fault-shrink integration 120 tests/fault/shrink.sh
# communicators over any set of processes from reconfiguration handles (identity, reorder, subset,
# singletons then grow, disjoint then merge, reused uuid, bad lists, absent member, wrong uuid)
suite fault-reconf integration 60 tests/fault/reconf.sh
# kill, abort and shrink over the ofi transport (tcp;ofi_rxm on loopback)
suite fault-ofi integration 240 tests/fault/ofi.sh
suite fault-chaos stress 900 tests/fault/chaos.sh
# 20 chaos trials with every pair over the ofi transport (tcp;ofi_rxm on loopback)
suite fault-chaos-ofi stress 300 env TD_CHAOS_TRANSPORTS=ofi TPU_DIST_OFI_PROVIDER='tcp;ofi_rxm' FI_TCP_IFACE=lo TPU_DIST_SOCKET_IFNAME=lo tests/fault/chaos.sh 20
suite fault-badargs integration 90 tests/fault/jobs.sh badargs
suite fault-mismatch integration 90 tests/fault/jobs.sh mismatch
suite fault-debug integration 90 tests/fault/jobs.sh debug
suite mpi-debug integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_MODE=debug mpirun -np 3 tests/mpi/test_mpi
# defer mode: the whole MPI suite deferred (alone and with TPU_DIST_CHECK), then defer against
# strict bit for bit at 2-4 ranks, divergent flush points, abort and a dead peer (tests/fault/defer.sh)
suite mpi-defer integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_MODE=defer mpirun -np 3 tests/mpi/test_mpi
suite mpi-defer-check integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_MODE=defer TPU_DIST_CHECK=1 TPU_DIST_PROGRESS_THREAD=0 mpirun -np 4 tests/mpi/test_mpi
suite fault-defer integration 120 sh -c 'for m in exact diverge abort dead; do tests/fault/defer.sh $m || exit 1; done'
suite fault-hostile integration 180 tests/fault/hostile.sh
suite tools-info integration 60 tests/mpi/tools_info.sh
suite mpi-knobs integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_PROGRESS_THREAD=0 TPU_DIST_SPIN_US=0 TPU_DIST_CHUNK_BYTES=4096 TPU_DIST_MAX_PIECES=3 mpirun -np 3 tests/mpi/test_mpi
suite fault-flight integration 60 tests/fault/jobs.sh flight
suite fault-inject integration 240 tests/fault/inject.sh
# non-blocking init/split/shrink (exact results, abort mid-creation, a peer that never arrives), the JSON
# flight record after a forced timeout, the health query of a job with a stalled rank
suite fault-async integration 120 tests/fault/async.sh
# fuzzing: the committed corpora replayed under gcc; then the libFuzzer targets (clang, 40 s each)
suite fuzz-replay integration 60 sh -c 'for t in bootstrap socket sched topo config env; do tests/fuzz/replay_$t tests/fuzz/corpus/$t || exit 1; done'
suite fuzz stress 1200 tests/fuzz/run.sh
# sanitizers: out-of-tree ASan+UBSan build; unit, sched, small MPI and fault jobs there
suite asan stress 1800 tests/asan.sh
suite mpi-socket-ring2 integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TRANSPORTS=socket TD_MPI_ONLY=large TPU_DIST_ALGO=allreduce=ring2 mpirun -np 3 tests/mpi/test_mpi
suite sim-diff integration 600 tests/sim/diff.sh
# all-to-all-v forced to two phases (counts exchange, then the torus plan): test_mpi exact at 2 ranks (a ring of 2) and 4 (2x2), and with TPU_DIST_CHECK=1
suite mpi-a2av-2phase integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TOPOLOGY=2 TPU_DIST_ALGO=alltoallv=torus mpirun -np 2 tests/mpi/test_mpi --expect-algo alltoallv=torus --expect-from 0
suite mpi-a2av-2phase-np4 integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_TOPOLOGY=2x2 TPU_DIST_ALGO=alltoallv=torus mpirun -np 4 tests/mpi/test_mpi --expect-algo alltoallv=torus --expect-from 0
suite mpi-a2av-2phase-check integration 180 env TPU_DIST_TIMEOUT_MS=60000 TPU_DIST_CHECK=1 TPU_DIST_TOPOLOGY=2x2 TPU_DIST_ALGO=alltoallv=torus mpirun -np 4 tests/mpi/test_mpi --expect-algo alltoallv=torus --expect-from 0
# multi-host (tests/cluster): 4 hosts as network namespaces (scripts/cluster), links at 2 Gbit/s;
# mpirun with a hostfile across 2 and 4 hosts (selection picks hier on 2; every hier forced on 4),
# COMM_ID on a second network, a host killed, a link cut, an intruder at every listener of a job
suite cluster integration 600 tests/cluster/run.sh
# the exact MPI suite on 2 hosts x 2 ranks over the ofi transport (tcp;ofi_rxm), then over sockets
suite cluster-ofi integration 300 tests/cluster/ofi.sh
